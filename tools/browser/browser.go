// Package browser is lucy_browse: a page opened in headless Chromium (chromedp), left to settle,
// optionally clicked, filled and scrolled, and read as Markdown with the web tools' reader; on
// request a screenshot is shared in the thread like a generated file.
//
// Every request the page makes (subresources, redirects, XHR and fetch, WebSockets) goes through an
// in-process forward proxy whose dialer is the guarded dialer of lucy_web_fetch (proxy.go), so the
// same address rule holds for all of them, checked when the connection is dialed. Each call starts
// its own browser with a fresh temporary profile that is removed afterwards; downloads are denied;
// only http and https are loaded; time, JavaScript heap, page text and screenshot size are bounded;
// and the browser's processes end with the call.
//
// Where no Chromium binary is found (LUCY_CHROMIUM, else chromium on PATH) the tool is withheld
// (tools.Offerer): it is not in the tools a run is offered.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/web"
)

// Browse is the tool's name (tools.Browse: the agent run counts its calls toward the request's cap
// on outbound calls).
const Browse = tools.Browse

// Limits of one call.
const (
	// maxSteps bounds the steps of one call.
	maxSteps = 10
	// maxFillChars bounds the text of one fill step.
	maxFillChars = 500
	// maxPageHTML bounds the rendered DOM read back (as lucy_web_fetch's MaxFetchBytes).
	maxPageHTML = tools.MaxFetchBytes
	// maxScreenshotBytes bounds a screenshot (a workspace file's limit).
	maxScreenshotBytes = tools.MaxFileBytes
	// jsHeapMB bounds the JavaScript heap of the page (V8's old space).
	jsHeapMB = 256
	// maxBrowsers bounds the browsers one worker runs at once (calls and rendered monitor checks):
	// each may hold a few hundred MB; more calls wait their turn within their own time limit.
	maxBrowsers = 3
)

// Limits bound one call's time; tests shorten them.
type Limits struct {
	// Total bounds the whole call: start, navigation, settling, steps, reading (45 s).
	Total time.Duration
	// Load bounds the wait for the page's load event: past it the page is read as it is (a page that
	// never finishes loading, such as one that streams or polls, still has text) (20 s).
	Load time.Duration
	// Settle bounds the wait for the page to become quiet after a navigation or a step (8 s).
	Settle time.Duration
}

// DefaultLimits are the limits of lucy_browse.
var DefaultLimits = Limits{Total: 45 * time.Second, Load: 20 * time.Second, Settle: 8 * time.Second}

// Browser is the domain of lucy_browse. It is safe for concurrent use: each call starts its own browser.
type Browser struct {
	exec   string // the Chromium binary; "" when none was found
	hosts  tools.PrivateHosts
	files  *files.Workspace // where screenshots are saved and shared from
	limits Limits
	slots  chan struct{} // maxBrowsers: one per running browser
}

// New returns the browser domain. chromium is the binary (Find); "" withholds lucy_browse. hosts are
// the private addresses the page may reach nonetheless (LUCY_ALLOWED_PRIVATE_HOSTS). ws saves and
// shares screenshots.
func New(chromium string, hosts tools.PrivateHosts, ws *files.Workspace, limits Limits) *Browser {
	if limits.Total <= 0 {
		limits.Total = DefaultLimits.Total
	}
	if limits.Load <= 0 {
		limits.Load = DefaultLimits.Load
	}
	if limits.Settle <= 0 {
		limits.Settle = DefaultLimits.Settle
	}
	return &Browser{exec: chromium, hosts: hosts, files: ws, limits: limits, slots: make(chan struct{}, maxBrowsers)}
}

// Find returns the Chromium binary to use: configured (LUCY_CHROMIUM) when set (and "" if it is not
// an executable: a wrong setting withholds the tool rather than start another browser), else the
// first of chromium, chromium-browser, google-chrome-stable, google-chrome on PATH, else "".
func Find(configured string) string {
	if configured != "" {
		p, err := exec.LookPath(configured)
		if err != nil {
			return ""
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Offers withholds lucy_browse when no Chromium binary was found (tools.Offerer).
func (b *Browser) Offers(tool string) (bool, string) {
	if b.exec == "" {
		return false, "no Chromium browser is installed on it (an operator adds one with apt-get install chromium, or sets LUCY_CHROMIUM)"
	}
	return true, ""
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: Browse,
		Description: "Open a web page (http or https) in a real browser that runs its JavaScript, wait for it to settle, and " +
			"return its readable text as Markdown. Use it for pages lucy_web_fetch reads as empty or script-only (web " +
			"applications, dashboards, pages built by JavaScript), or to click, fill in, scroll or wait for something first. " +
			"Steps run in order after the page loads. Set screenshot to share a picture of the page in the thread. The same " +
			"rules as lucy_web_fetch hold for the page and everything it loads: no private or internal addresses, no " +
			"credentials, and a URL you put together yourself that carries data waits for the person's approval, as does " +
			"filled-in text that carries data (the fills of one call count together). Slower than lucy_web_fetch: prefer " +
			"lucy_web_fetch for ordinary pages.",
		Human: "opening a web page in a browser",
		Long:  true,
	},
	Required: []string{"url"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("url", "The absolute URL, e.g. https://example.com/app.", 1, 2048),
			{Name: "steps", Schema: map[string]any{
				"type":        "array",
				"description": "What to do on the page before reading it, in order (at most 10).",
				"maxItems":    maxSteps,
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"action": map[string]any{"type": "string", "enum": []string{"click", "fill", "scroll", "wait_for"},
							"description": "click an element; fill an input with text; scroll an element into view (or, without a selector, down one screen); wait_for an element to appear."},
						"selector": map[string]any{"type": "string", "maxLength": 500,
							"description": "A CSS selector, e.g. button#load-more or input[name=q]. Needed by click, fill and wait_for; \"\" for scroll to scroll down one screen."},
						"text": map[string]any{"type": "string", "maxLength": maxFillChars, "description": "The text fill types; \"\" for the other actions."},
					},
					// Every field listed: nested objects name all their fields in required (ValidateArgs).
					"required":             []string{"action", "selector", "text"},
					"additionalProperties": false,
				},
			}},
			{Name: "screenshot", Schema: map[string]any{"type": "boolean",
				"description": "Share a screenshot of the page (as it is after the steps) in the thread. Default false."}},
			tools.IntProp("offset", "Where to start in the page's text: the offset a previous result gave (default 0).", 0, tools.MaxFetchBytes),
		}
	},
}, (*Browser).browse)

type step struct {
	Action   string `json:"action"`
	Selector string `json:"selector"`
	Text     string `json:"text"`
}

type browseArgs struct {
	URL        string `json:"url"`
	Steps      []step `json:"steps"`
	Screenshot bool   `json:"screenshot"`
	Offset     int    `json:"offset"`
}

func (b *Browser) browse(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args browseArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	for i, s := range args.Steps {
		if s.Selector == "" && s.Action != "scroll" {
			return tools.Output{}, tools.ArgErrorf(Browse, "step %d (%s) needs a selector", i+1, s.Action)
		}
		if s.Action == "fill" && s.Text == "" {
			return tools.Output{}, tools.ArgErrorf(Browse, "step %d (fill) needs the text to type", i+1)
		}
	}
	u, err := url.Parse(strings.TrimSpace(args.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tools.Output{}, tools.ArgErrorf(Browse, "%q is not an absolute http or https URL; give one like https://example.com/page",
			tools.Truncate(tools.RedactCredentials(args.URL), 200))
	}
	forms := web.SeenForms(strings.TrimSpace(args.URL), u)
	u.Fragment = ""
	shown := tools.RedactURL(u)
	if err := tools.RefuseCredentials(u, shown); err != nil {
		return tools.Output{}, err
	}
	if b.exec == "" {
		_, why := b.Offers(Browse)
		return tools.Output{}, tools.ArgErrorf(Browse, "%s is not available here: %s; use lucy_web_fetch or tell the person", Browse, why)
	}
	if hold, err := b.dataGuard(ctx, inv, u, forms, args.Steps); hold != nil || err != nil {
		if err != nil {
			return tools.Output{}, err
		}
		return *hold, nil
	}
	if err := b.hosts.CheckURL(ctx, u); err != nil {
		return tools.Output{}, web.RefusePrivate(shown)
	}

	page, err := b.render(ctx, u.String(), args.Steps, args.Screenshot)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Output{}, fmt.Errorf("browse %s: %w", shown, ctx.Err())
		}
		var refused *refusedError
		if errors.As(err, &refused) {
			if refused.host != "" && refused.host != u.Host {
				return tools.Output{}, web.RefusePrivate(shown + ", which redirected to " + refused.host + ",")
			}
			return tools.Output{}, web.RefusePrivate(shown)
		}
		return tools.ToolError("could not open %s in the browser: %v", shown, err), nil
	}
	return b.result(ctx, inv, shown, args, page)
}

// dataGuard holds the call for a person's approval when its URL carries data the run has not seen
// (as lucy_web_fetch does), or when its fill steps type text that carries data: a form a page asks
// the model to fill is as good a way out for the run's data as a URL. The fills of a call are judged
// together (judgeFills), with the URL when the model put it together. The approval's guard covers
// the URL and the steps, so an approved call runs exactly as approved, and one approval covers both
// holds.
func (b *Browser) dataGuard(ctx context.Context, inv tools.Invocation, u *url.URL, forms []string, steps []step) (*tools.Output, error) {
	target := u.String()
	guard := tools.TextHash(fmt.Sprintf("%s\n%s\n%+v", Browse, target, steps))
	if inv.Approved && inv.Guard == guard {
		return nil, nil
	}
	// seen asks, once, whether the run has seen the URL (or a person approved it): a link someone
	// else wrote holds none of the run's data.
	var seen *bool
	isSeen := func() (bool, error) {
		if seen == nil {
			ok, err := web.MayFetch(ctx, inv, target, forms)
			if err != nil {
				return false, fmt.Errorf("look for %s in what the run has seen: %w", tools.RedactURL(u), err)
			}
			seen = &ok
		}
		return *seen, nil
	}
	if data, why := tools.URLCarriesData(u); data {
		ok, err := isSeen()
		if err != nil {
			return nil, err
		}
		if !ok {
			out := web.HoldFetch(u, target, why)
			out.NeedsApproval.Guard = guard
			return &out, nil
		}
	}
	v := judgeFills(u, steps)
	if v.withURL && !v.alone {
		ok, err := isSeen()
		if err != nil {
			return nil, err
		}
		if ok {
			return nil, nil
		}
	}
	if !v.alone && !v.withURL {
		return nil, nil
	}
	what := "the text of " + v.steps
	if !v.alone {
		what = "the text of " + v.steps + ", with the address I put together,"
	}
	summary := fmt.Sprintf("I'd like to type text into a page of *%s*, and %s carries data: %s. Approve only if you "+
		"expect me to send this there.", tools.MrkdwnEscape(u.Hostname()), what, tools.MrkdwnEscape(v.why))
	var details strings.Builder
	if !v.alone {
		details.WriteString("The address (" + tools.BytesAsChars(len(target)) + "):\n```\n" + fence(target) + "\n```\n")
	}
	for i, s := range steps {
		if s.Action == "fill" {
			fmt.Fprintf(&details, "Step %d types into `%s`:\n```\n%s\n```\n", i+1, tools.MrkdwnEscape(s.Selector), fence(s.Text))
		}
	}
	return &tools.Output{Content: fmt.Sprintf("Nothing was changed: the page was not opened, because %s carries data (%s), "+
		"so it needs the person's approval.", what, v.why),
		NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: strings.TrimSuffix(details.String(), "\n"), Guard: guard}}, nil
}

// fence escapes text for a code block of an approval prompt.
func fence(text string) string {
	return strings.ReplaceAll(tools.MrkdwnEscape(text), "```", "`\u200b`\u200b`")
}

// fillVerdict is what a call's fill steps need (judgeFills).
type fillVerdict struct {
	// alone: the fills' texts, all together, carry data: the call waits for approval.
	alone bool
	// withURL: they carry data only together with the URL's host, path and query: the call waits
	// unless the run has seen the URL (a link someone else wrote holds none of the run's data).
	withURL bool
	// why says how, and steps which steps ("step 2", "steps 1, 3 and 4").
	why, steps string
}

// judgeFills judges the fill steps of one call together, by the thresholds of the URL guard
// (tools.TypedCarriesData): each text as one value a form sends, all of them as one call's data.
// Judged one by one, ten fills of 90 characters would each pass and carry 900 characters out
// unasked; judged together, a call carries at most what one URL may.
func judgeFills(u *url.URL, steps []step) fillVerdict {
	var typed []tools.Typed
	var nums []string
	for i, s := range steps {
		if s.Action == "fill" {
			typed = append(typed, tools.Typed{Text: s.Text, Where: fmt.Sprintf("the text of step %d", i+1)})
			nums = append(nums, fmt.Sprint(i+1))
		}
	}
	if len(typed) == 0 {
		return fillVerdict{}
	}
	v := fillVerdict{steps: "step " + nums[0]}
	if n := len(nums); n > 1 {
		v.steps = "steps " + strings.Join(nums[:n-1], ", ") + " and " + nums[n-1]
	}
	if data, why := tools.TypedCarriesData(nil, typed); data {
		v.alone, v.why = true, why
		return v
	}
	if data, why := tools.TypedCarriesData(u, typed); data {
		v.withURL, v.why = true, why
	}
	return v
}

// result renders what the browser read for the model, and shares the screenshot.
func (b *Browser) result(ctx context.Context, inv tools.Invocation, shown string, args browseArgs, page rendered) (tools.Output, error) {
	title, text := web.PageMarkdown(page.html, page.base())
	if page.title != "" {
		title = page.title
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "URL: %s\n", page.shownURL(shown))
	if title != "" {
		fmt.Fprintf(&sb, "Title: %s\n", tools.Truncate(strings.Join(strings.Fields(title), " "), 300))
	}
	for _, s := range page.steps {
		fmt.Fprintf(&sb, "Step: %s\n", s)
	}
	sb.WriteString("\n")
	if !web.WritePageWindow(&sb, text, args.Offset, "Call "+Browse+" again with the same url and steps and offset=%d to read on.") {
		return tools.ToolError("offset %d is past the end of the page's text (which ends at %d).", args.Offset, len(text)), nil
	}
	if page.htmlCapped {
		sb.WriteString("\n[The page is larger than 2 MB: only its first 2 MB were read.]")
	}
	if page.refused > 0 {
		fmt.Fprintf(&sb, "\n[%d request(s) of the page were refused: they lead to private, loopback, link-local or reserved "+
			"addresses (%s).]", page.refused, strings.Join(page.refusedHosts, ", "))
	}
	out := tools.Output{Content: sb.String()}
	if !args.Screenshot {
		return out, nil
	}
	switch {
	case page.png == nil:
		out.Content += "\n[No screenshot: " + page.pngProblem + ".]"
		return out, nil
	case b.files == nil:
		out.Content += "\n[No screenshot: there is no workspace to keep it in.]"
		return out, nil
	}
	name := fmt.Sprintf("screenshots/%s-%s.png", fileSafe(page.host()), time.Now().UTC().Format("20060102-150405"))
	shared, err := b.files.SaveAndShare(ctx, inv, Browse, name, page.png, fmt.Sprintf("PNG, %s", files.HumanBytes(int64(len(page.png)))), "this screenshot")
	if err != nil {
		return tools.Output{}, err
	}
	out.Content += "\n\nScreenshot: " + shared.Content
	out.Artifacts = shared.Artifacts
	out.IsError = shared.IsError
	return out, nil
}

// fileSafe keeps the letters, digits, dots and hyphens of a host name for a file name.
func fileSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "page"
	}
	return tools.Truncate(b.String(), 80)
}

// Available reports whether a browser binary was found (a monitor made with render needs one).
func (b *Browser) Available() bool { return b.exec != "" }

// PageText opens u in a browser of its own, under the same rules as lucy_browse (every request the
// page makes checked by the address rule, no downloads, a fresh profile), lets it settle and returns
// its final URL and readable text: a page monitor made with render.
func (b *Browser) PageText(ctx context.Context, u *url.URL) (final, text string, err error) {
	if b.exec == "" {
		return "", "", errors.New("no browser is installed")
	}
	page, err := b.render(ctx, u.String(), nil, false)
	if err != nil {
		return "", "", err
	}
	_, text = web.PageMarkdown(page.html, page.base())
	return page.finalURL, text, nil
}
