package tools

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
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/html/charset"
)

const (
	maxRedirects = 5
	userAgent    = "Lucy/1.0 (Slack assistant; +https://github.com/lucy-agent/lucy)"
)

// errPrivateAddress is returned (wrapped) when a URL or a redirect leads to an address Lucy may not
// fetch from; it becomes an *ArgError.
type errPrivateAddress struct{ host string }

func (e *errPrivateAddress) Error() string {
	return fmt.Sprintf("%s is a private, loopback or link-local address", e.host)
}

// blockedAddr reports whether a is an address a model-chosen URL must not reach: loopback, private
// (RFC 1918, fc00::/7), link-local (169.254/16 with the cloud metadata endpoint, fe80::/10), shared
// (100.64/10), unspecified, multicast, and the IPv4-mapped forms of all of these.
func blockedAddr(a netip.Addr) bool {
	a = a.Unmap()
	return !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a) || netip.MustParsePrefix("0.0.0.0/8").Contains(a)
}

// checkHost refuses hosts that are, or resolve to, blocked addresses. A lookup failure is not decided
// here: the request fails on it with a better message.
func (r *Registry) checkHost(ctx context.Context, host string) error {
	if r.deps.AllowPrivateNetworks {
		return nil
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return &errPrivateAddress{host: host}
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if blockedAddr(a) {
			return &errPrivateAddress{host: host}
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if blockedAddr(a) {
			return &errPrivateAddress{host: host}
		}
	}
	return nil
}

// newFetchClient returns the client lucy_web_fetch uses: the given one with our redirect policy, or our
// own whose dialer refuses blocked addresses after DNS resolution.
func (r *Registry) newFetchClient(given *http.Client) *http.Client {
	var c http.Client
	if given != nil {
		c = *given
	} else {
		dialer := &net.Dialer{
			Timeout: 10 * time.Second,
			Control: func(network, address string, _ syscall.RawConn) error {
				if r.deps.AllowPrivateNetworks {
					return nil
				}
				ap, err := netip.ParseAddrPort(address)
				if err != nil || blockedAddr(ap.Addr()) {
					return &errPrivateAddress{host: address}
				}
				return nil
			},
		}
		// No proxy: a proxy would make the dial-time check see the proxy's address, not the target's.
		// A deployment that needs one passes Deps.HTTP.
		c.Transport = &http.Transport{
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          20,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirected to a %s: URL; only http and https are fetched", req.URL.Scheme)
		}
		if req.URL.User != nil {
			// net/http would send the page's user:password as Basic auth; Lucy sends no credentials.
			return fmt.Errorf("redirected to %s, a URL with a user name or password, which Lucy does not follow", redact(req.URL))
		}
		return r.checkHost(req.Context(), req.URL.Hostname())
	}
	return &c
}

type webFetchArgs struct {
	URL    string `json:"url"`
	Offset int    `json:"offset"`
}

func (r *Registry) webFetch(ctx context.Context, e entry, inv Invocation) (Output, error) {
	var args webFetchArgs
	if err := decodeArgs(e, inv.Arguments, &args); err != nil {
		return Output{}, err
	}
	u, err := url.Parse(strings.TrimSpace(args.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Output{}, argErrorf(WebFetch, "%q is not an absolute http or https URL; give one like https://example.com/page",
			truncate(RedactCredentials(args.URL), 200))
	}
	u.Fragment = ""
	shown := redact(u)
	if err := refuseCredentials(u, shown); err != nil {
		return Output{}, err
	}
	if err := r.checkHost(ctx, u.Hostname()); err != nil {
		return Output{}, refusePrivate(shown)
	}

	fctx, cancel := context.WithTimeout(ctx, r.fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Output{}, argErrorf(WebFetch, "cannot request %s: %v", shown, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err := r.http.Do(req)
	if err != nil {
		return r.fetchFailed(ctx, shown, err)
	}
	defer resp.Body.Close()
	final := redact(resp.Request.URL)

	if code := resp.StatusCode; code < 200 || code > 299 {
		if transientStatus(code) {
			return Output{}, &TransientError{Tool: WebFetch, Err: fmt.Errorf("%s answered HTTP %s", final, resp.Status),
				RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return toolError("%s answered HTTP %s.", final, resp.Status), nil
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxFetchBytes+1))
	if err != nil {
		return r.fetchFailed(ctx, final, err)
	}
	capped := len(body) > MaxFetchBytes
	if capped {
		body = body[:MaxFetchBytes]
	}

	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		contentType = http.DetectContentType(body)
	}
	media, _, _ := mime.ParseMediaType(contentType)
	var title, text string
	switch {
	case media == "text/html" || media == "application/xhtml+xml":
		title, text = htmlToText(decodeCharset(body, contentType), resp.Request.URL)
	case isTextual(media):
		text = strings.TrimSpace(decodeCharset(body, contentType))
	default:
		return toolError("%s is %s (%d bytes), not a text or HTML page; lucy_web_fetch reads text only.",
			final, media, len(body)), nil
	}

	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", final)
	if title != "" {
		fmt.Fprintf(&b, "Title: %s\n", truncate(title, 300))
	}
	b.WriteString("\n")
	if args.Offset > 0 && args.Offset >= len(text) {
		return toolError("offset %d is past the end of the page's text (which ends at %d).", args.Offset, len(text)), nil
	}
	part, start, next := window(text, args.Offset, readWindowBytes)
	shownLen := len(part)
	if strings.TrimSpace(part) == "" {
		part = "(the page has no readable text)"
	}
	b.WriteString(part)
	if next > 0 || start > 0 {
		fmt.Fprintf(&b, "\n\n[Showing the text from offset %d to %d of %d.", start, start+shownLen, len(text))
		if next > 0 {
			fmt.Fprintf(&b, " Call lucy_web_fetch again with offset=%d to read on.", next)
		}
		b.WriteString("]")
	}
	if capped {
		b.WriteString("\n[The page is larger than 2 MB: only its first 2 MB were read.]")
	}
	return Output{Content: b.String()}, nil
}

// fetchFailed classifies a failed request or body read.
func (r *Registry) fetchFailed(ctx context.Context, shown string, err error) (Output, error) {
	if ctx.Err() != nil {
		// The activity itself was cancelled or timed out: not the page's fault, not ours to report.
		return Output{}, fmt.Errorf("fetch %s: %w", shown, ctx.Err())
	}
	var private *errPrivateAddress
	if errors.As(err, &private) {
		return Output{}, refusePrivate(shown)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // its message repeats the URL, which may hold credentials
	}
	transient := func(what string) (Output, error) {
		return Output{}, &TransientError{Tool: WebFetch, Err: fmt.Errorf("%s: %s", shown, what)}
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return transient(fmt.Sprintf("timed out after %s", r.fetchTimeout))
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return toolError("the host %s does not exist (DNS lookup found nothing). Check the URL.", dnsErr.Name), nil
		}
		return transient("DNS lookup failed: " + dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return transient("connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF):
		return transient("connection closed by the server")
	case errors.As(err, &netErr) && netErr.Timeout():
		return transient(fmt.Sprintf("timed out after %s", r.fetchTimeout))
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr):
		return toolError("%s has an invalid TLS certificate: %v", shown, err), nil
	}
	return toolError("could not fetch %s: %v", shown, err), nil
}

func refusePrivate(shown string) *ArgError {
	return argErrorf(WebFetch, "%s points to a private, loopback or link-local network address, which Lucy may not "+
		"fetch; use a public URL", shown)
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
// (a redirect may lead to a URL with one) and with secret query parameters masked.
func redact(u *url.URL) string {
	if u.User == nil {
		return RedactCredentials(u.String())
	}
	c := *u
	c.User = nil
	return RedactCredentials(c.String())
}

// secretParamName matches a query parameter name in secretParams, whole.
var secretParamName = regexp.MustCompile(`(?i)^(?:` + strings.Join(secretParams, "|") + `)$`)

// refuseCredentials refuses a URL that carries credentials: user:password, or a secret query
// parameter (token=, api_key=, a presigned link's signature). Lucy sends none: CallModel masks them
// before the call is stored in workflow history, so the URL the tool receives has REDACTED in their
// place, and fetching it would only end in a puzzling 401 or 403. Saying so lets the model ask the
// person for a link that works without them.
func refuseCredentials(u *url.URL, shown string) *ArgError {
	const ask = "Lucy does not send credentials, and removes them from what she stores. Ask the person for a " +
		"link that works without them (a public or shared link), or to paste the content"
	if u.User != nil {
		return argErrorf(WebFetch, "%s carries a user name or password. %s.", shown, ask)
	}
	for _, param := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, _ := strings.Cut(param, "=")
		if unescaped, err := url.QueryUnescape(name); err == nil {
			name = unescaped
		}
		if secretParamName.MatchString(name) {
			// Without its query: a name spelled with escapes (api%5Fkey) escapes RedactCredentials.
			bare := *u
			bare.RawQuery = ""
			return argErrorf(WebFetch, "%s?… carries a credential in its %q parameter. %s.", bare.String(), name, ask)
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
