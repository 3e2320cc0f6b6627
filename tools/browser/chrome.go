package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/lucy-agent/lucy/tools"
)

// rendered is what one browser call read.
type rendered struct {
	finalURL     string // the page's location after navigation and steps
	title        string
	html         string // the rendered DOM, at most maxPageHTML bytes
	htmlCapped   bool
	steps        []string // what each step did, in words
	png          []byte   // the screenshot, when asked for and within its limit
	pngProblem   string   // why there is none, when asked for
	refused      int      // requests the proxy refused
	refusedHosts []string
	// session is the browser's cookies and storage after the steps, when the call keeps a session.
	session *sessionState
	// typed are the stored keys the steps typed: taken out of everything the call returns.
	typed []string
	// downloads are the files download steps fetched; downloadProblems why one was not kept.
	downloads        []downloaded
	downloadProblems []string
}

// renderOpts are what a call adds to opening a page: a session to restore and keep, stored keys to
// type.
type renderOpts struct {
	// restore is the session's state to put back before the page opens (nil: none).
	restore *sessionState
	// keep reads the session's state back after the steps (rendered.session).
	keep bool
	// secret returns a stored key for fill_secret steps (stepEnv.secret).
	secret func(ctx context.Context, key, origin string) (string, error)
}

func (r rendered) base() *url.URL {
	u, _ := url.Parse(r.finalURL)
	return u
}

// shownURL is the final URL as results show it (credentials masked), or shown when it is unknown.
func (r rendered) shownURL(shown string) string {
	if u := r.base(); u != nil && u.Host != "" {
		return tools.RedactURL(u)
	}
	return shown
}

func (r rendered) host() string {
	if u := r.base(); u != nil {
		return u.Hostname()
	}
	return ""
}

// refusedError: the page itself (the URL given, or where it redirected) is at a refused address.
type refusedError struct{ host string }

func (e *refusedError) Error() string { return e.host + " is a refused address" }

// render opens target in a browser of its own, runs the steps and reads the page. The browser, its
// profile and its proxy are gone when it returns.
func (b *Browser) render(ctx context.Context, target string, steps []step, screenshot bool, opts renderOpts) (rendered, error) {
	var out rendered
	ctx, cancel := context.WithTimeout(ctx, b.limits.Total)
	defer cancel()
	select {
	case b.slots <- struct{}{}:
		defer func() { <-b.slots }()
	case <-ctx.Done():
		return out, fmt.Errorf("every browser of this worker stayed busy: %w", ctx.Err())
	}
	proxy, err := startProxy(b.hosts)
	if err != nil {
		return out, fmt.Errorf("start the address guard: %w", err)
	}
	defer proxy.close()
	proxyURL := "http://" + proxy.addr()

	flags := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(b.exec),
		// Every request through the guard, loopback included (Chromium bypasses the proxy for
		// loopback unless told not to with <-loopback>).
		chromedp.ProxyServer(proxyURL),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		// UDP does not go through an HTTP proxy: WebRTC may use none that is not proxied.
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("js-flags", "--max-old-space-size="+strconv.Itoa(jsHeapMB)),
		// One page: no more renderer processes than a page and a frame need.
		chromedp.Flag("renderer-process-limit", "2"),
		chromedp.Flag("disable-file-system", true),
		chromedp.Flag("no-pings", true),
		chromedp.WindowSize(1280, 900),
		// chromedp gives each browser a fresh temporary profile and removes it when the browser ends;
		// as root it adds --no-sandbox, which Chromium requires there.
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, flags...)
	defer func() {
		acancel() // waits for the browser to exit and kills what is left of its processes
		killLeftovers(proxyURL)
	}()
	cctx, ccancel := chromedp.NewContext(actx)
	defer ccancel()

	// Only http and https are loaded: every request of the page is paused and checked (Chromium
	// already refuses file: from a web page; this refuses any other scheme a page could reach).
	paused := chromedp.Events(cctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			go func() {
				if u, err := url.Parse(ev.Request.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
					chromedp.Call(cctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
					return
				}
				chromedp.Call(cctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
			}()
		}
	}()
	if _, err := chromedp.CallBrowser(cctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny}); err != nil {
		return out, fmt.Errorf("deny downloads: %w", err)
	}
	if _, err := chromedp.Call(cctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return out, fmt.Errorf("watch the page's requests: %w", err)
	}
	if opts.restore != nil {
		if err := restoreSession(cctx, opts.restore); err != nil {
			return out, fmt.Errorf("restore the session: %w", err)
		}
	}
	nctx, ncancel := context.WithTimeout(cctx, b.limits.Load)
	navErr := chromedp.Do(nctx, chromedp.Navigate(target))
	ncancel()
	if navErr != nil && nctx.Err() != nil && cctx.Err() == nil {
		navErr = nil // no load event in time: read the page as it is
	}
	// The page, or where it redirected, at a refused address: a refused plain http request answers
	// 403 at that location; a refused CONNECT (https) ends on Chromium's error page or fails the
	// navigation. Either way the proxy counted it.
	location, _ := chromedp.Run(cctx, chromedp.Location())
	failed := navErr != nil || strings.HasPrefix(location, "chrome-error:")
	switch {
	case proxy.wasRefused(hostPort(location)):
		return out, &refusedError{host: hostOf(location)}
	case failed && proxy.refused.Load() > 0:
		return out, &refusedError{host: hostOf(target)}
	case navErr != nil:
		return out, navErr
	case failed:
		return out, errors.New("the page could not be loaded (the site did not answer, or its certificate is not valid)")
	}
	b.settle(cctx)
	env := &stepEnv{secret: opts.secret}
	defer func() {
		if env.dir != "" {
			os.RemoveAll(env.dir)
		}
	}()
	for i, s := range steps {
		did, err := b.runStep(cctx, s, env)
		if err != nil {
			out.steps = append(out.steps, fmt.Sprintf("%d. %s %s: failed (%v); the steps after it were not run", i+1, s.Action, s.Selector, err))
			break
		}
		out.steps = append(out.steps, fmt.Sprintf("%d. %s", i+1, did))
		b.settle(cctx)
	}
	out.typed, out.downloads, out.downloadProblems = env.typed, env.files, env.problems
	if opts.keep {
		st, err := captureSession(cctx, opts.restore)
		if err != nil {
			return out, fmt.Errorf("read the session's cookies: %w", err)
		}
		out.session = st
	}
	location, err = chromedp.Run(cctx, chromedp.Location())
	if err != nil {
		return out, err
	}
	title, err := chromedp.Run(cctx, chromedp.Title())
	if err != nil {
		return out, err
	}
	html, err := chromedp.Run(cctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		return out, err
	}
	if u, err := url.Parse(location); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return out, fmt.Errorf("the page went to a %s address, which Lucy does not read", schemeOf(location))
	}
	out.finalURL, out.title = location, title
	if len(html) > maxPageHTML {
		html, out.htmlCapped = tools.Truncate(html, maxPageHTML), true
	}
	out.html = html
	if screenshot {
		if png, err := chromedp.Run(cctx, chromedp.CaptureScreenshot()); err != nil {
			out.pngProblem = "the browser could not take it: " + err.Error()
		} else if len(png) > maxScreenshotBytes {
			out.pngProblem = fmt.Sprintf("it would be %d bytes, over the 1 MB limit", len(png))
		} else {
			out.png = png
		}
	}
	out.refused = int(proxy.refused.Load())
	proxy.mu.Lock()
	out.refusedHosts = append(out.refusedHosts, proxy.refusedHosts...)
	proxy.mu.Unlock()
	return out, nil
}

// settle waits until the page is quiet: its text and the number of resources it loaded unchanged for
// three polls in a row (network idle and DOM stable), within the Settle limit.
func (b *Browser) settle(ctx context.Context) {
	deadline := time.Now().Add(b.limits.Settle)
	const poll = 250 * time.Millisecond
	last, quiet := "", 0
	for time.Now().Before(deadline) && quiet < 3 {
		sig, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`document.readyState + ":" + (document.body ? document.body.innerText.length : 0) + ":" + performance.getEntriesByType("resource").length`))
		if err != nil {
			return
		}
		if sig == last && strings.HasPrefix(sig, "complete:") {
			quiet++
		} else {
			quiet = 0
		}
		last = sig
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
}

// killLeftovers kills any process still running with this call's proxy on its command line: a
// browser process that outlived the browser (chromedp kills those of its profile; this is the same
// rule for anything it missed), so that no process outlives the call.
func killLeftovers(proxyURL string) {
	for _, pid := range processesWith("--proxy-server=" + proxyURL) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesWith lists the processes whose command line has arg.
func processesWith(arg string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for a := range bytes.SplitSeq(cmdline, []byte{0}) {
			if string(a) == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// hostPort is the host:port a request to raw connects to, as the proxy records it.
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" || u.Scheme == "wss" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return raw
}

func schemeOf(raw string) string {
	if i := strings.Index(raw, ":"); i > 0 {
		return raw[:i]
	}
	return "non-web"
}
