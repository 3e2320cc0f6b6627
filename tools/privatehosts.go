package tools

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// PrivateHosts are the operator's exceptions to the private-address guard
// (LUCY_ALLOWED_PRIVATE_HOSTS): the internal hosts that URLs from chat (lucy_web_fetch, a monitor, a
// connected MCP server or OpenAPI service) may reach although they are private, loopback, link-local
// or reserved. Everything else stays refused. It is set by the operator only: nothing a person or the
// model says in chat can add to it.
//
// It is immutable once parsed, and its zero value allows nothing (production without the setting).
// Build it with ParseAllowedPrivateHosts, or AllowAllPrivate in tests.
type PrivateHosts struct {
	// all lifts the guard entirely: tests that fetch from httptest (AllowAllPrivate).
	all   bool
	names []nameEntry
	addrs []addrEntry
}

// nameEntry allows a host name (lower case, no trailing dot) whatever private address it resolves
// to, on port, or on any port when port is 0.
type nameEntry struct {
	name string
	port uint16
}

// addrEntry allows the addresses of prefix on port, or on any port when port is 0. exact is an
// entry naming a single address (a bare IP, ip:port, a /32 or /128): only such an entry may open a
// cloud metadata address, so that a broad range listed for an internal network never does.
type addrEntry struct {
	prefix netip.Prefix
	port   uint16
	exact  bool
}

// AllowAllPrivate returns the policy that lets requests reach every private address: for tests that
// fetch from httptest on loopback. Never for production.
func AllowAllPrivate() PrivateHosts { return PrivateHosts{all: true} }

// privateHostsExample ends every parsing error, so that the operator sees the accepted forms.
const privateHostsExample = "give a comma-separated list such as wiki.internal,jira.corp:443,10.0.0.5:8443,[fd00::1]:8080,10.20.0.0/16"

// ParseAllowedPrivateHosts reads LUCY_ALLOWED_PRIVATE_HOSTS: a comma-separated list whose entries are
// a host name (wiki.internal: that name on any port, whatever private address it resolves to), a
// host:port (jira.corp:443, 10.0.0.5:8443, [fd00::1]:8080: only that port), an IP address (any port)
// or a CIDR (10.20.0.0/16, fd00::/8: those addresses on any port). Spaces around entries and empty
// entries are ignored; "" is the zero PrivateHosts. The error names the first bad entry.
func ParseAllowedPrivateHosts(spec string) (PrivateHosts, error) {
	var p PrivateHosts
	for _, raw := range strings.Split(spec, ",") {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		if err := p.add(e); err != nil {
			return PrivateHosts{}, fmt.Errorf("%w; %s", err, privateHostsExample)
		}
	}
	return p, nil
}

// add parses one entry of ParseAllowedPrivateHosts.
func (p *PrivateHosts) add(e string) error {
	notEntry := fmt.Errorf("%q is not a host, host:port or CIDR", e)
	if strings.Contains(e, "://") {
		return fmt.Errorf("%q is a URL, not a host, host:port or CIDR: give only its host (and port)", e)
	}
	if strings.Contains(e, "/") {
		prefix, err := netip.ParsePrefix(e)
		if err != nil {
			return notEntry
		}
		if prefix.Addr().Zone() != "" {
			return fmt.Errorf("%q names a network interface (%%%s): give the range without it", e, prefix.Addr().Zone())
		}
		if prefix.Bits() == 0 {
			// Every address, the whole internet and the host Lucy runs on: never what was meant.
			return fmt.Errorf("%q allows every address: list only the internal ranges Lucy needs, such as 10.20.0.0/16", e)
		}
		if prefix.Masked() != prefix {
			return fmt.Errorf("%q has bits set after its first %d: write the range as %s", e, prefix.Bits(), prefix.Masked())
		}
		p.addAddr(prefix.Addr(), prefix.Bits(), 0)
		return nil
	}
	bare := e
	if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") {
		bare = e[1 : len(e)-1] // [fd00::1], as in a URL
	}
	if a, err := netip.ParseAddr(bare); err == nil && (bare == e || a.Is6()) {
		if a.Zone() != "" {
			return fmt.Errorf("%q names a network interface (%%%s): give the address without it", e, a.Zone())
		}
		p.addAddr(a, -1, 0)
		return nil
	}
	host, portText, err := net.SplitHostPort(e)
	if err != nil {
		if name, ok := hostName(e); ok {
			p.names = append(p.names, nameEntry{name: name})
			return nil
		}
		return notEntry
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return fmt.Errorf("%q: the port %q is not a number from 1 to 65535", e, portText)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return fmt.Errorf("%q names a network interface (%%%s): give the address without it", e, a.Zone())
		}
		p.addAddr(a, -1, uint16(port))
		return nil
	}
	name, ok := hostName(host)
	if !ok {
		return notEntry
	}
	p.names = append(p.names, nameEntry{name: name, port: uint16(port)})
	return nil
}

// addAddr adds an address entry; bits -1 means the single address a.
func (p *PrivateHosts) addAddr(a netip.Addr, bits int, port uint16) {
	if bits < 0 {
		bits = a.BitLen()
	}
	// An IPv4-mapped address or range (::ffff:10.0.0.0/104) is stored as the IPv4 one it maps, since
	// addresses are unmapped before they are matched (allowsAddr).
	if a.Is4In6() && bits >= 96 {
		a, bits = a.Unmap(), bits-96
	}
	p.addrs = append(p.addrs, addrEntry{prefix: netip.PrefixFrom(a, bits), port: port, exact: bits == a.BitLen()})
}

// hostName returns s as a host name entry (lower case, trailing dot removed) if it is one: dot-
// separated labels of letters, digits, hyphens and underscores, whose last label is not a number
// (10.0.0 would be read as an IP address by some resolvers).
func hostName(s string) (string, bool) {
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if s == "" || len(s) > 253 {
		return "", false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return "", false
			}
		}
	}
	if _, err := strconv.ParseUint(labels[len(labels)-1], 0, 64); err == nil {
		return "", false
	}
	return s, true
}

// IsZero reports whether p allows nothing beyond the public internet.
func (p PrivateHosts) IsZero() bool { return !p.all && len(p.names) == 0 && len(p.addrs) == 0 }

// String lists p's entries as ParseAllowedPrivateHosts reads them (names lower case, ranges
// masked), for the log line at start; "" for none.
func (p PrivateHosts) String() string {
	if p.all {
		return "every private address (tests)"
	}
	var out []string
	for _, n := range p.names {
		out = append(out, withPort(n.name, n.port))
	}
	for _, a := range p.addrs {
		s := a.prefix.String()
		if a.exact {
			s = a.prefix.Addr().String()
			if a.port != 0 && a.prefix.Addr().Is6() {
				s = "[" + s + "]"
			}
		}
		out = append(out, withPort(s, a.port))
	}
	return strings.Join(out, ",")
}

func withPort(host string, port uint16) string {
	if port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(int(port))
}

// allowsName reports whether a name entry allows host (already lower case without a trailing dot)
// on port.
func (p PrivateHosts) allowsName(host string, port uint16) bool {
	return slices.ContainsFunc(p.names, func(n nameEntry) bool {
		return n.name == host && (n.port == 0 || n.port == port)
	})
}

// allowsAddr reports whether an address entry allows a on port. A cloud metadata address is allowed
// only by an entry naming exactly it.
func (p PrivateHosts) allowsAddr(a netip.Addr, port uint16) bool {
	a = a.Unmap()
	meta := metadataAddr(a)
	return slices.ContainsFunc(p.addrs, func(e addrEntry) bool {
		return (e.port == 0 || e.port == port) && e.prefix.Contains(a) && (e.exact || !meta)
	})
}

// permits is the rule for one address a request would connect to, on port: nameAllowed says whether
// the host name it was resolved from is listed (for that port). An address entry allows its
// addresses; a cloud metadata address needs an entry naming exactly it; a public address is always
// allowed; any other blocked address only when its host name is listed.
func (p PrivateHosts) permits(a netip.Addr, port uint16, nameAllowed bool) bool {
	switch {
	case p.all || p.allowsAddr(a, port):
		return true
	case metadataAddr(a):
		return false
	case !blockedAddr(a):
		return true
	}
	return nameAllowed && a.Zone() == ""
}

// metadataAddrs are the cloud metadata and credential endpoints: reaching one hands out the
// machine's or the pod's cloud credentials, so no name or range entry opens them (see allowsAddr).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack instance metadata
	netip.MustParseAddr("fd00:ec2::254"),   // AWS instance metadata over IPv6
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS Pod Identity agent
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS Pod Identity agent over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud instance metadata
}

// nat64 is the NAT64 well-known prefix: an address in it reaches the IPv4 address in its last 32
// bits (see blockedRanges).
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// metadataAddr reports whether a is, or reaches through IPv4 mapping or NAT64, a cloud metadata
// address.
func metadataAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	return slices.Contains(metadataAddrs, a)
}

// urlPort is the port a request to u connects to: the URL's, else the scheme's default (0 when the
// scheme has none, which only entries without a port match).
func urlPort(u *url.URL) uint16 {
	if s := u.Port(); s != "" {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return 0
		}
		return uint16(n)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return 80
	case "https", "wss":
		return 443
	}
	return 0
}
