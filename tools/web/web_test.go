package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// testPage is a page with what the reading of HTML must handle (testdata/page.html).
var testPage = func() string {
	b, err := os.ReadFile(filepath.Join("testdata", "page.html"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// webServer serves the pages the fetch tests read. /slow blocks until the request is cancelled.
func webServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.Write([]byte("<p>caf\xe9</p>"))
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "just text\n")
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := "<p>" + strings.Repeat("word ", 1000) + "</p>\n"
		for written := 0; written < 3*tools.MaxFetchBytes; written += len(chunk) {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return // the client stopped reading at the cap
			}
		}
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := range 10_000 {
			fmt.Fprintf(w, "line %05d\n", i)
		}
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n...."))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/plain", http.StatusFound)
	})
	mux.HandleFunc("/to-credentials", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://page:hunter2@"+r.Host+"/plain", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestWebFetch(t *testing.T) {
	srv, _ := webServer(t)
	r := newTestFetcher(t, testDeps{AllowPrivateNetworks: true})
	fetch := func(path string, extra ...string) (tools.Output, error) {
		args := fmt.Sprintf(`{"url": %q%s}`, srv.URL+path, strings.Join(extra, ""))
		return run(t, r, tools.WebFetch, args)
	}

	t.Run("html", func(t *testing.T) {
		out, err := fetch("/page")
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "URL: "+srv.URL+"/page\n", "Title: Pricing & Plans\n", "# Plans",
			"[the docs]("+srv.URL+"/docs/team?x=1)")
		if strings.Contains(out.Content, "do not show") {
			t.Errorf("script content leaked into the text")
		}
	})
	t.Run("charset", func(t *testing.T) {
		out, _ := fetch("/latin1")
		wantOK(t, out, "café")
	})
	t.Run("plain text and redirect", func(t *testing.T) {
		out, _ := fetch("/redirect")
		wantOK(t, out, "URL: "+srv.URL+"/plain\n", "just text")
	})
	t.Run("2 MB cap", func(t *testing.T) {
		out, err := fetch("/huge")
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "only its first 2 MB were read", "offset=")
		if n := len([]rune(out.Content)); n > tools.MaxOutputChars {
			t.Errorf("content is %d characters, over tools.MaxOutputChars", n)
		}
	})
	t.Run("paging", func(t *testing.T) {
		first, _ := fetch("/long")
		wantOK(t, first, "line 00000", "Call lucy_web_fetch again with offset=")
		_, after, _ := strings.Cut(first.Content, "offset=")
		next := strings.TrimSuffix(strings.TrimSuffix(after, "]"), " to read on.")
		second, _ := fetch("/long", `, "offset": `+next)
		wantOK(t, second, "[Showing the text from offset "+next)
		if strings.Contains(second.Content, "line 00000") {
			t.Errorf("second part repeats the first")
		}
		past, _ := fetch("/long", `, "offset": 2000000`)
		wantToolError(t, past, "past the end")
	})
	t.Run("404 is a tool error", func(t *testing.T) {
		out, err := fetch("/missing")
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		wantToolError(t, out, "HTTP 404 Not Found")
	})
	t.Run("binary is a tool error", func(t *testing.T) {
		out, _ := fetch("/image")
		wantToolError(t, out, "image/png", "not a text or HTML page")
	})
	t.Run("503 is transient", func(t *testing.T) {
		_, err := fetch("/unavailable")
		wantTransient(t, err)
	})
	t.Run("429 is transient with Retry-After", func(t *testing.T) {
		_, err := fetch("/busy")
		if te := wantTransient(t, err); te.RetryAfter != 7*time.Second {
			t.Errorf("RetryAfter = %v, want 7s", te.RetryAfter)
		}
	})
	t.Run("redirect loop", func(t *testing.T) {
		out, _ := fetch("/loop")
		wantToolError(t, out, "stopped after 5 redirects")
	})
	t.Run("redirect to a URL with credentials", func(t *testing.T) {
		out, err := fetch("/to-credentials")
		if err != nil {
			t.Fatal(err)
		}
		wantToolError(t, out, "a URL with a user name or password, which Lucy does not follow")
		if strings.Contains(out.Content, "hunter2") {
			t.Errorf("output shows the password: %s", out.Content)
		}
	})
}

// A URL with credentials is refused before any request, with a message that tells the model what to
// ask the person for; the refusal never repeats the secret.
func TestWebFetchRefusesCredentials(t *testing.T) {
	srv, hits := webServer(t)
	r := newTestFetcher(t, testDeps{AllowPrivateNetworks: true})
	withUser, _ := url.Parse(srv.URL + "/plain")
	withUser.User = url.UserPassword("me", "hunter2")
	tests := []struct{ name, url, want string }{
		{"user and password", withUser.String(), "carries a user name or password"},
		{"user only", strings.Replace(srv.URL, "//", "//hunter2@", 1) + "/plain", "carries a user name or password"},
		{"already redacted", strings.Replace(srv.URL, "//", "//REDACTED@", 1) + "/plain", "carries a user name or password"},
		{"token parameter", srv.URL + "/plain?page=2&token=hunter2", `credential in its "token" parameter`},
		{"presigned link", srv.URL + "/plain?X-Amz-Signature=hunter2", `credential in its "X-Amz-Signature" parameter`},
		{"escaped parameter name", srv.URL + "/plain?api%5Fkey=hunter2", `credential in its "api_key" parameter`},
		// Refused for another reason, and the message quotes the URL: masked all the same.
		{"not http", "ftp://me:hunter2@example.com/f?token=hunter2", "ftp://REDACTED@example.com/f?token=REDACTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, tt.url))
			if strings.HasPrefix(tt.url, "ftp:") {
				wantArgError(t, err, tools.WebFetch, tt.want, "is not an absolute http or https URL")
			} else {
				wantArgError(t, err, tools.WebFetch, tt.want, "Lucy does not send credentials", "Ask the person for a link")
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the refusal repeats the secret: %v", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d request(s) reached the server", n)
	}
	// Parameters that merely look alike are fetched.
	wantOK(t, mustRun(t, r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, srv.URL+"/plain?token_type=bearer&monkey=1")), "just text")
}

func TestWebFetchTimeout(t *testing.T) {
	srv, _ := webServer(t)
	r := newTestFetcher(t, testDeps{AllowPrivateNetworks: true})
	r.fetchTimeout = 50 * time.Millisecond
	_, err := run(t, r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, srv.URL+"/slow"))
	te := wantTransient(t, err)
	wantContains(t, te.Error(), "timed out")

	// The activity's own cancellation is not the page's failure: it is returned as is.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Run(ctx, tools.Invocation{Name: tools.WebFetch, Arguments: fmt.Sprintf(`{"url": %q}`, srv.URL+"/slow"), Team: testTeam})
	var transient *tools.TransientError
	if !errors.Is(err, context.Canceled) || errors.As(err, &transient) {
		t.Errorf("cancelled fetch: err = %v, want context.Canceled and not transient", err)
	}
}

func TestWebFetchConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := newTestFetcher(t, testDeps{AllowPrivateNetworks: true})
	_, err = run(t, r, tools.WebFetch, fmt.Sprintf(`{"url": "http://%s/"}`, addr))
	wantTransient(t, err)
}

func TestWebFetchRefusesPrivateAddresses(t *testing.T) {
	srv, hits := webServer(t)
	r := newTestFetcher(t, testDeps{}) // production default
	for _, u := range []string{
		srv.URL + "/page",
		"http://localhost:1/",
		"http://[::1]:1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/",
		"http://0.0.0.0:1/",
		"http://198.18.0.1/",
		"http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
		"http://[2002:a9fe:a9fe::1]/",
		"http://[fe80::1%25eth0]/",
		"http://[::ffff:127.0.0.1]:1/",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := run(t, r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, u))
			wantArgError(t, err, tools.WebFetch, "private, loopback, link-local or reserved")
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the private server was reached %d time(s)", n)
	}

	// The dial-time check stops what the pre-flight check cannot see (a name that resolves to a
	// private address after the check): call the client directly.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/page", nil)
	_, err := r.http.Do(req)
	if !tools.IsPrivateAddress(err) {
		t.Errorf("dialing a private address: err = %v, want a private-address refusal", err)
	}
}

// A public page that redirects to a private address: the redirect is refused, the private address is
// never reached. The "public" host is a public IP whose connections the test's transport carries to a
// loopback server, as a real site on the internet would be reached.
func TestWebFetchRefusesRedirectToPrivateAddress(t *testing.T) {
	var privateHits atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		privateHits.Add(1)
		fmt.Fprint(w, "internal secrets")
	}))
	t.Cleanup(private.Close)
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, private.URL+"/secret", http.StatusFound)
	}))
	t.Cleanup(public.Close)
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if strings.HasPrefix(addr, "93.184.216.34:") {
				addr = strings.TrimPrefix(public.URL, "http://")
			}
			return dialer.DialContext(ctx, network, addr)
		},
	}}
	r := newTestFetcher(t, testDeps{HTTP: client})
	out, err := run(t, r, tools.WebFetch, `{"url": "http://93.184.216.34/start"}`)
	if err == nil && !out.IsError {
		t.Fatalf("the redirect to a private address was followed: %+v", out)
	}
	if msg := fmt.Sprint(err) + out.Content; !strings.Contains(msg, "private, loopback, link-local or reserved") {
		t.Errorf("refusal %q", msg)
	}
	if n := privateHits.Load(); n != 0 {
		t.Errorf("the private server was reached %d time(s)", n)
	}
}

// LUCY_ALLOWED_PRIVATE_HOSTS: a server on loopback is fetched only when its address (with its port,
// or a range holding it) is listed; otherwise the refusal says what to do. A listed server that
// redirects to a private address that is not listed is refused there, and the other server never
// reached. No client is given: the fetches go through the dial-time check as in production.
func TestWebFetchAllowedPrivateHosts(t *testing.T) {
	var privateHits atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		privateHits.Add(1)
		fmt.Fprint(w, "internal secrets")
	}))
	t.Cleanup(private.Close)
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/to-private" {
			http.Redirect(w, r, private.URL+"/secret", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "the internal wiki")
	}))
	t.Cleanup(internal.Close)
	hostPort := strings.TrimPrefix(internal.URL, "http://")
	_, port, _ := net.SplitHostPort(hostPort)

	for _, tt := range []struct {
		spec    string
		allowed bool
	}{
		{hostPort, true},
		{"127.0.0.0/8", true},
		{"10.0.0.0/8, 127.0.0.1:" + port, true},
		{"", false},
		{"127.0.0.1:1", false},
		{"10.0.0.0/8", false},
		{"localhost:" + port, false}, // a name entry allows that name, not the address it resolves to
	} {
		t.Run(tt.spec, func(t *testing.T) {
			hosts, err := tools.ParseAllowedPrivateHosts(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			r := newTestFetcher(t, testDeps{PrivateHosts: hosts})
			before := hits.Load()
			out, err := run(t, r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, internal.URL+"/page"))
			if tt.allowed {
				if err != nil {
					t.Fatal(err)
				}
				wantOK(t, out, "the internal wiki")
				if hits.Load() != before+1 {
					t.Error("no request reached the server")
				}
				return
			}
			wantArgError(t, err, tools.WebFetch, "points to a private, loopback, link-local or reserved network address",
				"use a public URL", "an operator can allow its host in LUCY_ALLOWED_PRIVATE_HOSTS")
			if hits.Load() != before {
				t.Error("the server was reached")
			}
		})
	}

	t.Run("redirect to a private address not listed", func(t *testing.T) {
		hosts, err := tools.ParseAllowedPrivateHosts(hostPort)
		if err != nil {
			t.Fatal(err)
		}
		r := newTestFetcher(t, testDeps{PrivateHosts: hosts})
		_, err = run(t, r, tools.WebFetch, fmt.Sprintf(`{"url": %q}`, internal.URL+"/to-private"))
		wantArgError(t, err, tools.WebFetch, "private, loopback, link-local or reserved")
		if n := privateHits.Load(); n != 0 {
			t.Errorf("the server that is not listed was reached %d time(s)", n)
		}
	})
}
