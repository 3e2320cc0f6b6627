package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The guard of requests to URLs from chat (lucy_web_fetch, a monitor's check, a connected MCP server
// or OpenAPI service): no private, loopback, link-local or reserved address unless the operator lists
// it (PrivateHosts, LUCY_ALLOWED_PRIVATE_HOSTS), checked before the request, at each redirect and
// again when the connection is dialed (so DNS rebinding cannot reach one); no credentials sent; and how
// such URLs are shown in results. Several domains make such requests, so it is here rather than in one
// of them.

const (
	maxRedirects = 5
	// UserAgent is the User-Agent of every request to a URL the model chose.
	UserAgent = "Lucy/1.0 (Slack assistant; +https://github.com/lucy-agent/lucy)"
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

// CheckURL refuses a URL whose host is, or resolves to, an address Lucy may not reach: a private,
// loopback, link-local or reserved one that p does not allow (see PrivateHosts.permits), on the URL's
// port (the scheme's default when it has none). It is the check before a request; the client of
// NewGuardedClient checks again at each redirect and when it dials, since the name may resolve
// elsewhere by then (DNS rebinding). A lookup failure is not decided here: the request fails on it with
// a better message. A refusal satisfies IsPrivateAddress.
func (p PrivateHosts) CheckURL(ctx context.Context, u *url.URL) error {
	return p.checkHost(ctx, nil, u.Hostname(), urlPort(u))
}

// checkHost is CheckURL for host and port, resolving with r (nil: net.DefaultResolver; tests give
// one that answers what they need).
func (p PrivateHosts) checkHost(ctx context.Context, r *net.Resolver, host string, port uint16) error {
	if p.all {
		return nil
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if !p.permits(a, port, false) {
			return &errPrivateAddress{host: host}
		}
		return nil
	}
	nameAllowed := p.allowsName(host, port)
	// Go answers these names itself, without DNS, with loopback: refused by name unless listed.
	if !nameAllowed && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return &errPrivateAddress{host: host}
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !p.permits(a, port, nameAllowed) {
			return &errPrivateAddress{host: host}
		}
	}
	return nil
}

// NewGuardedClient returns the client for URLs from chat (lucy_web_fetch, a monitor's check, a
// connected MCP server or OpenAPI service): given (nil: a client of our own) with our redirect
// policy (at most 5 redirects, http and https only, no credentials, each target checked by
// p.CheckURL). Our own client's dialer also checks every address it connects to, after DNS
// resolution, against p (so DNS rebinding cannot reach a refused address), and uses no proxy; a given
// client keeps its transport, so only the checks before the request and at each redirect apply.
// Callers check the first URL with p.CheckURL before the request.
func NewGuardedClient(given *http.Client, p PrivateHosts) *http.Client {
	return newGuardedClient(given, p, nil)
}

// newGuardedClient is NewGuardedClient resolving with r (nil: net.DefaultResolver).
func newGuardedClient(given *http.Client, p PrivateHosts, r *net.Resolver) *http.Client {
	var c http.Client
	if given != nil {
		c = *given
	} else {
		// No proxy: a proxy would make the dial-time check see the proxy's address, not the target's.
		// A deployment that needs one passes Deps.HTTP.
		c.Transport = &http.Transport{
			DialContext:           guardedDial(p, r),
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
		return p.checkHost(req.Context(), r, req.URL.Hostname(), urlPort(req.URL))
	}
	return &c
}

// GuardedDialer is the dialer of NewGuardedClient's own transport: it dials a host:port and refuses,
// at dial time, every address p does not allow (so DNS rebinding cannot reach one). The browser's
// forward proxy dials with it, so that each request a page makes meets the same rule as a fetch.
func GuardedDialer(p PrivateHosts) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return guardedDial(p, nil)
}

// guardedDial dials the host:port the transport asks for (the URL's, since there is no proxy) and
// checks, in the dialer's Control, each address it resolved to before connecting: the check DNS
// rebinding cannot pass. Whether the host name is listed in p (for this port) is known here only, from
// the name the transport asked for, so it is decided before resolution and handed to Control; address
// entries (CIDRs, ip:port) are matched on the address and port Control sees.
func guardedDial(p PrivateHosts, r *net.Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nameAllowed := false
		if host, portText, err := net.SplitHostPort(addr); err == nil {
			if port, err := strconv.ParseUint(portText, 10, 16); err == nil {
				nameAllowed = p.allowsName(strings.TrimSuffix(strings.ToLower(host), "."), uint16(port))
			}
		}
		d := &net.Dialer{
			Timeout:  10 * time.Second,
			Resolver: r,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil || !p.permits(ap.Addr(), ap.Port(), nameAllowed) {
					return &errPrivateAddress{host: address}
				}
				return nil
			},
		}
		return d.DialContext(ctx, network, addr)
	}
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
		return ArgErrorf(WebFetch, "%s carries a user name or password. %s.", shown, ask)
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
			return ArgErrorf(WebFetch, "%s?… carries a credential in its %q parameter. %s.", bare.String(), name, ask)
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

// IsPrivateAddress reports whether err (or an error it wraps) is a refusal of PrivateHosts.CheckURL
// or of the client of NewGuardedClient (a redirect, a dial): the URL leads to an address Lucy may not
// reach.
func IsPrivateAddress(err error) bool {
	var private *errPrivateAddress
	return errors.As(err, &private)
}

// RedactURL renders u for results and errors, which must not carry credentials: without its
// userinfo and with secret query parameters masked.
func RedactURL(u *url.URL) string { return redact(u) }

// RefuseCredentials refuses, with an *ArgError for lucy_web_fetch, a URL that carries credentials
// (user:password, or a secret query parameter); shown is the URL as results name it (RedactURL).
func RefuseCredentials(u *url.URL, shown string) *ArgError { return refuseCredentials(u, shown) }

// Truncate cuts s to at most n bytes, at a rune boundary, and marks the cut with "...".
func Truncate(s string, n int) string { return truncate(s, n) }

// DialContext connects to addr (host:port) for a protocol other than HTTP (a team's IMAP and SMTP
// servers) under p: every address the name resolves to is checked as NewGuardedClient's dialer
// checks it, so a mail server connected from chat cannot reach an internal address that p does not
// allow, whatever DNS answers later.
func (p PrivateHosts) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return guardedDial(p, nil)(ctx, network, addr)
}

// Lists reports whether the operator listed host (on port) in LUCY_ALLOWED_PRIVATE_HOSTS, by name or
// by address, or p allows every private address (tests). A connection without TLS (a mail server in
// "plain" mode) is accepted only to such a host: the operator vouches for the network path.
func (p PrivateHosts) Lists(host string, port uint16) bool {
	if p.all {
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return p.allowsAddr(a, port)
	}
	return p.allowsName(host, port)
}
