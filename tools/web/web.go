package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/lucy-agent/lucy/tools"
)

// lucy_web_fetch reads a public web page as text.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.WebFetch,
		Description: "Fetch a public web page (http or https) and return its readable text, with headings and links " +
			"kept. Long pages come in parts of about 14,000 characters: call again with the offset the result gives. " +
			"URLs that carry credentials (user:password@, a token, key or signature parameter) are refused: Lucy " +
			"does not send credentials. A URL you put together yourself that carries a lot of data in its path or " +
			"query waits for the person's approval; links used exactly as they appear in messages, pages and search " +
			"results do not.",
		Idempotent: true,
		Human:      "reading a web page",
		Long:       true,
	},
	Required: []string{"url"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("url", "The absolute URL, e.g. https://example.com/pricing.", 1, 2048),
			tools.IntProp("offset", "Where to start in the page's text: the offset a previous result gave (default 0).", 0, tools.MaxFetchBytes),
		}
	},
}, (*Fetcher).webFetch)

type webFetchArgs struct {
	URL    string `json:"url"`
	Offset int    `json:"offset"`
}

func (f *Fetcher) webFetch(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args webFetchArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	u, err := url.Parse(strings.TrimSpace(args.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tools.Output{}, tools.ArgErrorf(tools.WebFetch, "%q is not an absolute http or https URL; give one like https://example.com/page",
			tools.Truncate(tools.RedactCredentials(args.URL), 200))
	}
	forms := SeenForms(strings.TrimSpace(args.URL), u)
	u.Fragment = ""
	shown := tools.RedactURL(u)
	if err := tools.RefuseCredentials(u, shown); err != nil {
		return tools.Output{}, err
	}
	// Before the host is looked up: a DNS query alone would send data written into a host name.
	if data, why := tools.URLCarriesData(u); data {
		target := u.String()
		ok, err := mayFetch(ctx, inv, target, forms)
		if err != nil {
			return tools.Output{}, fmt.Errorf("look for %s in what the run has seen: %w", shown, err)
		}
		if !ok {
			return holdFetch(u, target, why), nil
		}
	}
	if err := f.hosts.CheckURL(ctx, u); err != nil {
		return tools.Output{}, refusePrivate(shown)
	}

	fctx, cancel := context.WithTimeout(ctx, f.fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tools.Output{}, tools.ArgErrorf(tools.WebFetch, "cannot request %s: %v", shown, err)
	}
	req.Header.Set("User-Agent", tools.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err := f.http.Do(req)
	if err != nil {
		return f.fetchFailed(ctx, shown, err)
	}
	defer resp.Body.Close()
	final := tools.RedactURL(resp.Request.URL)

	if code := resp.StatusCode; code < 200 || code > 299 {
		if transientStatus(code) {
			return tools.Output{}, &tools.TransientError{Tool: tools.WebFetch, Err: fmt.Errorf("%s answered HTTP %s", final, resp.Status),
				RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return tools.ToolError("%s answered HTTP %s.", final, resp.Status), nil
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, tools.MaxFetchBytes+1))
	if err != nil {
		return f.fetchFailed(ctx, final, err)
	}
	capped := len(body) > tools.MaxFetchBytes
	if capped {
		body = body[:tools.MaxFetchBytes]
	}

	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		contentType = http.DetectContentType(body)
	}
	media, _, _ := mime.ParseMediaType(contentType)
	var title, text string
	var shell bool // an HTML page with next to no text and scripts: built by JavaScript
	switch {
	case media == "text/html" || media == "application/xhtml+xml":
		page := decodeCharset(body, contentType)
		title, text = PageMarkdown(page, resp.Request.URL)
		shell = scriptBuilt(page, text)
	case isTextual(media):
		text = strings.TrimSpace(decodeCharset(body, contentType))
	default:
		return tools.ToolError("%s is %s (%d bytes), not a text or HTML page; lucy_web_fetch reads text only.",
			final, media, len(body)), nil
	}

	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", final)
	if title != "" {
		fmt.Fprintf(&b, "Title: %s\n", tools.Truncate(title, 300))
	}
	b.WriteString("\n")
	if !WritePageWindow(&b, text, args.Offset, "Call lucy_web_fetch again with offset=%d to read on.") {
		return tools.ToolError("offset %d is past the end of the page's text (which ends at %d).", args.Offset, len(text)), nil
	}
	if capped {
		b.WriteString("\n[The page is larger than 2 MB: only its first 2 MB were read.]")
	}
	if shell {
		b.WriteString("\n[The page has next to no text and loads scripts: its content is probably built by " +
			"JavaScript in the browser, which lucy_web_fetch does not run. If lucy_browse is among your tools, " +
			"read it with lucy_browse, which renders the page in a browser.]")
	}
	return tools.Output{Content: b.String()}, nil
}

// fetchFailed classifies a failed request or body read.
func (f *Fetcher) fetchFailed(ctx context.Context, shown string, err error) (tools.Output, error) {
	if ctx.Err() != nil {
		// The activity itself was cancelled or timed out: not the page's fault, not ours to report.
		return tools.Output{}, fmt.Errorf("fetch %s: %w", shown, ctx.Err())
	}
	if tools.IsPrivateAddress(err) {
		return tools.Output{}, refusePrivate(shown)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // its message repeats the URL, which may hold credentials
	}
	transient := func(what string) (tools.Output, error) {
		return tools.Output{}, &tools.TransientError{Tool: tools.WebFetch, Err: fmt.Errorf("%s: %s", shown, what)}
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return transient(fmt.Sprintf("timed out after %s", f.fetchTimeout))
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return tools.ToolError("the host %s does not exist (DNS lookup found nothing). Check the URL.", dnsErr.Name), nil
		}
		return transient("DNS lookup failed: " + dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return transient("connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF):
		return transient("connection closed by the server")
	case errors.As(err, &netErr) && netErr.Timeout():
		return transient(fmt.Sprintf("timed out after %s", f.fetchTimeout))
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr):
		return tools.ToolError("%s has an invalid TLS certificate: %v", shown, err), nil
	}
	return tools.ToolError("could not fetch %s: %v", shown, err), nil
}

func refusePrivate(shown string) *tools.ArgError {
	return tools.ArgErrorf(tools.WebFetch, "%s points to a private, loopback, link-local or reserved network address, which Lucy may not "+
		"fetch; use a public URL. If it is an internal site the team needs, an operator can allow its host in "+
		"LUCY_ALLOWED_PRIVATE_HOSTS", shown)
}

// transientStatus reports the HTTP statuses worth retrying.
func transientStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

func isTextual(media string) bool {
	switch {
	case strings.HasPrefix(media, "text/"),
		media == "application/json", strings.HasSuffix(media, "+json"),
		media == "application/xml", strings.HasSuffix(media, "+xml"),
		media == "application/javascript", media == "application/x-javascript",
		media == "application/yaml", media == "application/x-yaml", media == "application/toml",
		media == "application/x-ndjson", media == "application/csv":
		return true
	}
	return false
}

// decodeCharset converts body to UTF-8 according to the Content-Type header, a BOM or a <meta charset>.
func decodeCharset(body []byte, contentType string) string {
	enc, name, _ := charset.DetermineEncoding(body, contentType)
	if name != "utf-8" {
		if decoded, err := enc.NewDecoder().Bytes(body); err == nil {
			body = decoded
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// redact renders u for results and errors, which must not carry credentials: without its userinfo

// WritePageWindow writes the part of a page's text that one call shows, from offset, and where it
// sits in the whole; readOn is the sentence (with a %d for the next offset) that says how to read
// on. It reports false, writing nothing, when offset is past the end. lucy_web_fetch and
// lucy_browse page through what they read the same way.
func WritePageWindow(b *strings.Builder, text string, offset int, readOn string) bool {
	if offset > 0 && offset >= len(text) {
		return false
	}
	part, start, next := tools.Window(text, offset, tools.ReadWindowBytes)
	shownLen := len(part)
	if strings.TrimSpace(part) == "" {
		part = "(the page has no readable text)"
	}
	b.WriteString(part)
	if next > 0 || start > 0 {
		fmt.Fprintf(b, "\n\n[Showing the text from offset %d to %d of %d.", start, start+shownLen, len(text))
		if next > 0 {
			b.WriteString(" ")
			fmt.Fprintf(b, readOn, next)
		}
		b.WriteString("]")
	}
	return true
}
