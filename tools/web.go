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

// webTools read public web pages.
var webTools = []entry{
	{
		spec: Spec{
			Name: WebFetch,
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
		required: []string{"url"},
		props: func() []prop {
			return []prop{
				strProp("url", "The absolute URL, e.g. https://example.com/pricing.", 1, 2048),
				intProp("offset", "Where to start in the page's text: the offset a previous result gave (default 0).", 0, MaxFetchBytes),
			}
		},
		run: (*Registry).webFetch,
	},
}

const (
	maxRedirects = 5
	userAgent    = "Lucy/1.0 (Slack assistant; +https://github.com/lucy-agent/lucy)"
)

// errPrivateAddress is returned (wrapped) when a URL or a redirect leads to an address Lucy may not
// fetch from; it becomes an *ArgError.
type errPrivateAddress struct{ host string }

func (e *errPrivateAddress) Error() string {
	return fmt.Sprintf("%s is a private, loopback, link-local or reserved address", e.host)
}

// specialRange is a row of blockedRanges.
type specialRange struct {
	prefix netip.Prefix
	// embedsIPv4: the range carries an IPv4 address in its last 32 bits and reaches exactly that
	// address, so the address is judged by the IPv4 one instead of being refused outright.
	embedsIPv4 bool
}

// blockedRanges are the special-purpose ranges of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries that a model-chosen URL must not reach: they are not on the public internet, reach the
// host Lucy runs on or its network, or carry an IPv4 address that could be a private one. IPv6
// outside 2000::/3 is refused as well (see blockedAddr); the IPv6 rows outside it name what that
// rule covers, and keep the table whole should the rule ever go.
var blockedRanges = []specialRange{
	// IPv4.
	{prefix: netip.MustParsePrefix("0.0.0.0/8")},       // "this network"; 0.0.0.0 reaches the local host
	{prefix: netip.MustParsePrefix("10.0.0.0/8")},      // private (RFC 1918)
	{prefix: netip.MustParsePrefix("100.64.0.0/10")},   // shared address space, carrier-grade NAT (RFC 6598)
	{prefix: netip.MustParsePrefix("127.0.0.0/8")},     // loopback
	{prefix: netip.MustParsePrefix("169.254.0.0/16")},  // link-local, with the cloud metadata endpoint
	{prefix: netip.MustParsePrefix("172.16.0.0/12")},   // private (RFC 1918)
	{prefix: netip.MustParsePrefix("192.0.0.0/24")},    // IETF protocol assignments (RFC 6890)
	{prefix: netip.MustParsePrefix("192.0.2.0/24")},    // documentation, TEST-NET-1
	{prefix: netip.MustParsePrefix("192.88.99.0/24")},  // 6to4 relay anycast, deprecated (RFC 7526)
	{prefix: netip.MustParsePrefix("192.168.0.0/16")},  // private (RFC 1918)
	{prefix: netip.MustParsePrefix("198.18.0.0/15")},   // benchmarking (RFC 2544)
	{prefix: netip.MustParsePrefix("198.51.100.0/24")}, // documentation, TEST-NET-2
	{prefix: netip.MustParsePrefix("203.0.113.0/24")},  // documentation, TEST-NET-3
	{prefix: netip.MustParsePrefix("224.0.0.0/4")},     // multicast
	{prefix: netip.MustParsePrefix("240.0.0.0/4")},     // reserved, with the broadcast 255.255.255.255

	// IPv6 that reaches an IPv4 address: judged by it.
	{prefix: netip.MustParsePrefix("::ffff:0:0/96"), embedsIPv4: true}, // IPv4-mapped
	// NAT64 well-known prefix (RFC 6052): on an IPv6-only network with DNS64 every IPv4-only site
	// resolves into it, so refusing it outright would refuse the public web there.
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), embedsIPv4: true},

	// IPv6.
	{prefix: netip.MustParsePrefix("::/128")},          // unspecified; reaches the local host
	{prefix: netip.MustParsePrefix("::1/128")},         // loopback
	{prefix: netip.MustParsePrefix("::/96")},           // IPv4-compatible, deprecated (RFC 4291)
	{prefix: netip.MustParsePrefix("::ffff:0:0:0/96")}, // IPv4-translated (RFC 2765), not routed
	{prefix: netip.MustParsePrefix("64:ff9b:1::/48")},  // local-use IPv4/IPv6 translation (RFC 8215)
	{prefix: netip.MustParsePrefix("100::/64")},        // discard-only (RFC 6666)
	{prefix: netip.MustParsePrefix("2001::/23")},       // IETF protocol assignments, Teredo (2001::/32) embeds IPv4
	{prefix: netip.MustParsePrefix("2001:db8::/32")},   // documentation
	{prefix: netip.MustParsePrefix("2002::/16")},       // 6to4: embeds an IPv4 address, relays deprecated
	{prefix: netip.MustParsePrefix("3fff::/20")},       // documentation (RFC 9637)
	{prefix: netip.MustParsePrefix("5f00::/16")},       // segment routing SIDs (RFC 9602)
	{prefix: netip.MustParsePrefix("fc00::/7")},        // unique local, the IPv6 private range
	{prefix: netip.MustParsePrefix("fe80::/10")},       // link-local
	{prefix: netip.MustParsePrefix("fec0::/10")},       // site-local, deprecated but still routed by some hosts
	{prefix: netip.MustParsePrefix("ff00::/8")},        // multicast
}

// globalUnicast6 is the only IPv6 range IANA allocates for the public internet (RFC 4291); every
// other unicast range is reserved or local.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// blockedAddr reports whether a is an address a model-chosen URL must not reach: one of
// blockedRanges, IPv6 outside 2000::/3, or an address with a zone (it names a local interface).
func blockedAddr(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return true
	}
	for _, r := range blockedRanges {
		if !r.prefix.Contains(a) {
			continue
		}
		if r.embedsIPv4 {
			b := a.As16()
			return blockedAddr(netip.AddrFrom4([4]byte(b[12:])))
		}
		return true
	}
	return a.Is6() && !globalUnicast6.Contains(a)
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

func (r *Registry) webFetch(ctx context.Context, inv Invocation) (Output, error) {
	var args webFetchArgs
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	u, err := url.Parse(strings.TrimSpace(args.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Output{}, argErrorf(WebFetch, "%q is not an absolute http or https URL; give one like https://example.com/page",
			truncate(RedactCredentials(args.URL), 200))
	}
	forms := SeenForms(strings.TrimSpace(args.URL), u)
	u.Fragment = ""
	shown := redact(u)
	if err := refuseCredentials(u, shown); err != nil {
		return Output{}, err
	}
	// Before the host is looked up: a DNS query alone would send data written into a host name.
	if data, why := URLCarriesData(u); data {
		target := u.String()
		ok, err := mayFetch(ctx, inv, target, forms)
		if err != nil {
			return Output{}, fmt.Errorf("look for %s in what the run has seen: %w", shown, err)
		}
		if !ok {
			return holdFetch(u, target, why), nil
		}
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
	part, start, next := Window(text, args.Offset, readWindowBytes)
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
	return argErrorf(WebFetch, "%s points to a private, loopback, link-local or reserved network address, which Lucy may not "+
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
