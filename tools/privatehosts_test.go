package tools

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func mustPrivateHosts(t *testing.T, spec string) PrivateHosts {
	t.Helper()
	p, err := ParseAllowedPrivateHosts(spec)
	if err != nil {
		t.Fatalf("ParseAllowedPrivateHosts(%q): %v", spec, err)
	}
	return p
}

func TestParseAllowedPrivateHosts(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"", ""},
		{" , ,", ""},
		{"wiki.internal", "wiki.internal"},
		{"Wiki.Internal.", "wiki.internal"},
		{"jira.corp:443", "jira.corp:443"},
		{"JIRA.corp.:443", "jira.corp:443"},
		{"my_host", "my_host"},
		{"10.0.0.5", "10.0.0.5"},
		{"10.0.0.5:8443", "10.0.0.5:8443"},
		{"fd00::1", "fd00::1"},
		{"[fd00::1]", "fd00::1"},
		{"[fd00::1]:8080", "[fd00::1]:8080"},
		{"10.20.0.0/16", "10.20.0.0/16"},
		{"10.0.0.5/32", "10.0.0.5"},
		{"fd00::/8", "fd00::/8"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"::ffff:10.0.0.5", "10.0.0.5"},
		{" wiki.internal , 10.20.0.0/16,[fd00::1]:8080 ", "wiki.internal,10.20.0.0/16,[fd00::1]:8080"},
	} {
		p, err := ParseAllowedPrivateHosts(tt.spec)
		if err != nil {
			t.Errorf("ParseAllowedPrivateHosts(%q): %v", tt.spec, err)
			continue
		}
		if got := p.String(); got != tt.want {
			t.Errorf("ParseAllowedPrivateHosts(%q) = %q, want %q", tt.spec, got, tt.want)
		}
		if p.IsZero() != (tt.want == "") {
			t.Errorf("ParseAllowedPrivateHosts(%q).IsZero() = %v", tt.spec, p.IsZero())
		}
	}

	for _, tt := range []struct{ spec, want string }{
		{"https://wiki.internal", `"https://wiki.internal" is a URL`},
		{"wiki.internal/docs", `"wiki.internal/docs" is not a host, host:port or CIDR`},
		{"*.corp", `"*.corp" is not a host, host:port or CIDR`},
		{"wiki internal", `"wiki internal" is not a host, host:port or CIDR`},
		{"-bad.corp", `"-bad.corp" is not a host, host:port or CIDR`},
		{"10.0.0", `"10.0.0" is not a host, host:port or CIDR`},
		{"10.0.0.256", `"10.0.0.256" is not a host, host:port or CIDR`},
		{"[10.0.0.5]", `"[10.0.0.5]" is not a host, host:port or CIDR`},
		{"fd00::1:8080", ""}, // an IPv6 address, not a port: accepted (see below)
		{"jira.corp:0", `"jira.corp:0": the port "0" is not a number from 1 to 65535`},
		{"jira.corp:70000", `the port "70000" is not a number from 1 to 65535`},
		{"jira.corp:https", `the port "https" is not a number`},
		{"10.20.0.0/33", `"10.20.0.0/33" is not a host, host:port or CIDR`},
		{"10.20.1.0/16", `write the range as 10.20.0.0/16`},
		{"0.0.0.0/0", `"0.0.0.0/0" allows every address`},
		{"::/0", `"::/0" allows every address`},
		{"fe80::1%eth0", `names a network interface`},
		{"wiki.internal,,bad entry", `"bad entry" is not a host`},
	} {
		_, err := ParseAllowedPrivateHosts(tt.spec)
		if tt.want == "" {
			if err != nil {
				t.Errorf("ParseAllowedPrivateHosts(%q): %v", tt.spec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseAllowedPrivateHosts(%q) error = %v, want it to say %s", tt.spec, err, tt.want)
			continue
		}
		// The error shows the accepted forms, so that the operator can fix the list.
		if !strings.Contains(err.Error(), "wiki.internal,jira.corp:443,10.0.0.5:8443,[fd00::1]:8080,10.20.0.0/16") {
			t.Errorf("ParseAllowedPrivateHosts(%q) error = %v, without an example", tt.spec, err)
		}
	}
}

// fakeResolver is a Go resolver whose DNS server is this test: it answers A and AAAA queries for the
// names of answers (lower case, without the trailing dot) with their addresses, and NXDOMAIN for any
// other name. It stands for a DNS server an attacker controls (a name that resolves to a private
// address), without the network.
func fakeResolver(answers map[string][]string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		// Not a PacketConn: the resolver speaks DNS over TCP framing to it.
		client, server := net.Pipe()
		go serveDNS(server, answers)
		return client, nil
	}}
}

func serveDNS(c net.Conn, answers map[string][]string) {
	defer c.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(msg)
		if err != nil {
			return
		}
		q, err := p.Question()
		if err != nil {
			return
		}
		addrs, known := answers[strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")]
		rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
		if !known {
			rh.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(make([]byte, 2, 512), rh)
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		for _, s := range addrs {
			a := netip.MustParseAddr(s)
			rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
			switch {
			case q.Type == dnsmessage.TypeA && a.Is4():
				_ = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
			case q.Type == dnsmessage.TypeAAAA && a.Is6():
				_ = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
			}
		}
		out, err := b.Finish()
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(out, uint16(len(out)-2))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// The check before a request: host names, host:port, IPs and CIDRs (IPv4 and IPv6) allowed on their
// port, everything else private refused, cloud metadata refused unless listed by its exact address.
func TestPrivateHostsCheckURL(t *testing.T) {
	resolver := fakeResolver(map[string][]string{
		"wiki.internal":     {"10.1.2.3"},
		"sub.wiki.internal": {"10.1.2.3"},
		"jira.corp":         {"10.9.9.9", "fd00::9"},
		"v6.corp":           {"fd00::1"},
		"other.corp":        {"10.1.2.3"},
		"public.example":    {"93.184.216.34", "2606:2800:220:1::1"},
		"mixed.example":     {"93.184.216.34", "10.1.2.3"},
		"metadata.internal": {"169.254.169.254"},
		"ecs.internal":      {"169.254.170.2"},
		"rebind.example":    {"127.0.0.1"},
	})
	spec := "wiki.internal, jira.corp:443, v6.corp:8080, 10.0.0.5:8443, 172.16.0.0/12, fd00:1234::/32, [fd00::7]:9000, " +
		"169.254.0.0/16, 192.168.1.10, metadata.internal, fd00:ec2::/32"
	p := mustPrivateHosts(t, spec)
	for _, tt := range []struct {
		url     string
		allowed bool
	}{
		// Host names: on any port, or only the listed one (the scheme's default when the URL has none).
		{"http://wiki.internal/", true},
		{"https://WIKI.internal.:8443/page", true},
		{"https://jira.corp/browse/X-1", true},
		{"https://jira.corp:443/", true},
		{"http://jira.corp/", false}, // port 80
		{"https://jira.corp:8443/", false},
		{"http://v6.corp:8080/", true},
		{"http://v6.corp/", false},
		{"http://other.corp/", false}, // resolves to the same address as wiki.internal, but is not listed
		{"http://sub.wiki.internal/", false},
		// IP and ip:port entries.
		{"https://10.0.0.5:8443/", true},
		{"https://10.0.0.5/", false},
		{"http://10.0.0.6:8443/", false},
		{"http://192.168.1.10:1234/", true},
		{"http://192.168.1.11/", false},
		{"http://[::ffff:192.168.1.10]/", true}, // the same address, IPv4-mapped
		{"http://[fd00::7]:9000/", true},
		{"http://[fd00::7]:9001/", false},
		// CIDRs, IPv4 and IPv6.
		{"http://172.16.0.1/", true},
		{"http://172.31.255.254:81/", true},
		{"http://172.32.0.1/", true}, // public
		{"http://[fd00:1234::5]/", true},
		{"http://[fd00:1235::5]/", false},
		{"http://[fe80::1%25eth0]/", false},
		// Everything else private stays refused.
		{"http://10.1.2.3/", false},
		{"http://127.0.0.1/", false},
		{"http://localhost/", false},
		{"http://rebind.example/", false},
		{"http://mixed.example/", false},
		{"http://public.example/", true},
		// Cloud metadata: never opened by a range or a name entry.
		{"http://169.254.169.254/latest/meta-data/", false},
		{"http://169.254.170.2/v2/credentials", false},
		{"http://169.254.10.1/", true}, // the rest of the listed link-local range
		{"http://metadata.internal/", false},
		{"http://ecs.internal/", false},
		{"http://[fd00:ec2::254]/", false},
		{"http://[::ffff:169.254.169.254]/", false},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		err = p.checkHost(context.Background(), resolver, u.Hostname(), urlPort(u))
		if (err == nil) != tt.allowed {
			t.Errorf("%s: err = %v, want allowed %v", tt.url, err, tt.allowed)
		}
		if err != nil && !IsPrivateAddress(err) {
			t.Errorf("%s: the refusal %v is not IsPrivateAddress", tt.url, err)
		}
	}

	// Without entries, only public addresses; with every private address allowed (tests), all.
	for _, host := range []string{"wiki.internal", "10.0.0.5", "169.254.169.254"} {
		if err := (PrivateHosts{}).checkHost(context.Background(), resolver, host, 80); !IsPrivateAddress(err) {
			t.Errorf("no entries: %s: err = %v, want a refusal", host, err)
		}
		if err := AllowAllPrivate().checkHost(context.Background(), resolver, host, 80); err != nil {
			t.Errorf("AllowAllPrivate: %s: %v", host, err)
		}
	}

	// A metadata address listed exactly is reachable: the operator named it.
	exact := mustPrivateHosts(t, "169.254.169.254:80, fd00:ec2::254")
	for _, tt := range []struct {
		host    string
		port    uint16
		allowed bool
	}{
		{"169.254.169.254", 80, true}, {"169.254.169.254", 8080, false}, {"fd00:ec2::254", 80, true}, {"169.254.170.2", 80, false},
	} {
		if err := exact.checkHost(context.Background(), resolver, tt.host, tt.port); (err == nil) != tt.allowed {
			t.Errorf("exact metadata entries: %s:%d: err = %v, want allowed %v", tt.host, tt.port, err, tt.allowed)
		}
	}
	// The public CheckURL reads the port from the URL, or the scheme.
	if err := mustPrivateHosts(t, "127.0.0.1:443").CheckURL(context.Background(), &url.URL{Scheme: "https", Host: "127.0.0.1"}); err != nil {
		t.Errorf("CheckURL https://127.0.0.1 with 127.0.0.1:443 listed: %v", err)
	}
	if err := mustPrivateHosts(t, "127.0.0.1:443").CheckURL(context.Background(), &url.URL{Scheme: "http", Host: "127.0.0.1"}); !IsPrivateAddress(err) {
		t.Errorf("CheckURL http://127.0.0.1 with 127.0.0.1:443 listed: err = %v, want a refusal", err)
	}
}

// The dial-time check, on a client of NewGuardedClient: a name that resolves to a private address
// when the connection is made (after any check before it, as DNS rebinding does) is refused unless
// the name, or the address and port, is listed; a listed name never opens a metadata address; a
// redirect to a private address that is not listed is refused, and that server never reached.
func TestGuardedClientDialAndRedirects(t *testing.T) {
	var hits, privateHits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		privateHits.Add(1)
		fmt.Fprint(w, "internal secrets")
	}))
	t.Cleanup(private.Close)
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	resolver := fakeResolver(map[string][]string{
		"rebind.example":    {"127.0.0.1"},
		"wiki.internal":     {"127.0.0.1"},
		"metadata.internal": {"169.254.169.254"},
	})
	getWith := func(t *testing.T, given *http.Client, p PrivateHosts, target string) error {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Straight to the client: no check before the request, as when the name resolved to a public
		// address then.
		resp, err := newGuardedClient(given, p, resolver).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	get := func(t *testing.T, p PrivateHosts, target string) error { return getWith(t, nil, p, target) }

	for _, tt := range []struct {
		name, spec, url string
		allowed         bool
	}{
		{"name not listed", "", "http://rebind.example:" + port + "/", false},
		{"another name listed", "wiki.internal", "http://rebind.example:" + port + "/", false},
		{"name listed", "rebind.example", "http://rebind.example:" + port + "/", true},
		{"name listed on this port", "rebind.example:" + port, "http://rebind.example:" + port + "/", true},
		{"name listed on another port", "rebind.example:1", "http://rebind.example:" + port + "/", false},
		{"address and port listed", "127.0.0.1:" + port, "http://rebind.example:" + port + "/", true},
		{"address listed on another port", "127.0.0.1:1", "http://rebind.example:" + port + "/", false},
		{"range listed", "127.0.0.0/8", "http://rebind.example:" + port + "/", true},
		{"IPv6 range listed", "::1/128", "http://rebind.example:" + port + "/", false},
		{"every private address", "", "http://rebind.example:" + port + "/", true}, // AllowAllPrivate below
		{"metadata by a listed name", "metadata.internal", "http://metadata.internal/latest/meta-data/", false},
		{"metadata by a listed range", "169.254.0.0/16", "http://169.254.169.254/latest/meta-data/", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPrivateHosts(t, tt.spec)
			if tt.name == "every private address" {
				p = AllowAllPrivate()
			}
			before := hits.Load()
			err := get(t, p, tt.url)
			if tt.allowed {
				if err != nil {
					t.Fatalf("GET %s with %q listed: %v", tt.url, tt.spec, err)
				}
				if hits.Load() != before+1 {
					t.Error("the server was not reached")
				}
				return
			}
			if !IsPrivateAddress(err) {
				t.Fatalf("GET %s with %q listed: err = %v, want a private-address refusal", tt.url, tt.spec, err)
			}
			if hits.Load() != before {
				t.Error("the server was reached")
			}
		})
	}

	// Redirects: srv is listed by its address and port; private (another port) is not. With a given
	// client (its own transport, no dial-time check), the redirect check alone refuses.
	p := mustPrivateHosts(t, "127.0.0.1:"+port)
	for _, given := range []*http.Client{nil, {}} {
		if err := getWith(t, given, p, srv.URL+"/?to="+url.QueryEscape(srv.URL+"/")); err != nil {
			t.Errorf("a redirect to the listed server (given client %v): %v", given != nil, err)
		}
		for _, to := range []string{private.URL + "/secret", strings.Replace(private.URL, "127.0.0.1", "rebind.example", 1) + "/secret"} {
			if err := getWith(t, given, p, srv.URL+"/?to="+url.QueryEscape(to)); !IsPrivateAddress(err) {
				t.Errorf("a redirect to %s (given client %v): err = %v, want a private-address refusal", to, given != nil, err)
			}
		}
	}
	if n := privateHits.Load(); n != 0 {
		t.Errorf("the server that is not listed was reached %d time(s)", n)
	}
}

func TestMetadataAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254": true, "::ffff:169.254.169.254": true, "64:ff9b::a9fe:a9fe": true, "fd00:ec2::254": true,
		"169.254.170.2": true, "100.100.100.200": true, "fd00:ec2::254%eth0": true,
		"169.254.169.253": false, "10.0.0.1": false, "fd00:ec2::1": false,
	} {
		if got := metadataAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("metadataAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}
