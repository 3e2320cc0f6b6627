// Package browser is lucy_browse: a page opened in headless Chromium (chromedp), left to settle,
// optionally clicked, filled and scrolled, and read as Markdown with the web tools' reader; on
// request a screenshot is shared in the thread like a generated file.
//
// Every request the page makes (subresources, redirects, XHR and fetch, WebSockets) goes through an
// in-process forward proxy whose dialer is the guarded dialer of lucy_web_fetch (proxy.go), so the
// same address rule holds for all of them, checked when the connection is dialed. Each call starts
// its own browser with a fresh temporary profile that is removed afterwards; downloads are denied
// except during a download step, whose file is saved in the workspace; only http and https are
// loaded; time, JavaScript heap, page text and screenshot size are bounded; and the browser's
// processes end with the call.
//
// A call may name a session (session.go): the person's cookies and localStorage for that name are
// restored into the fresh browser before the page opens and sealed back into the state store after
// the steps, so a login survives the next calls. A fill_secret step types the person's stored key
// (keys.go), read inside the activity and only for the origin it is bound to; its value is taken
// out of everything the call returns.
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
	"path"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/secrets"
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

	sessions *Sessions    // named sessions; nil: not offered (WithSessions)
	creds    Credentials  // stored keys for fill_secret; nil: none (WithCredentials)
	keys     KeyRequester // the Add key button; nil: a missing key cannot be asked for
	// sessionWaitFor bounds a call's wait for its session's tab; zero: the call's limit (tests
	// shorten it).
	sessionWaitFor time.Duration
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
			"lucy_web_fetch for ordinary pages. To stay logged in across calls, name a session (e.g. \"vendor-portal\"): the " +
			"person's cookies and site storage are kept under that name and restored in their later calls with the same name " +
			"(kept 24 h after the last use; end_session forgets them). To log in, type a stored key with a fill_secret step " +
			"whose text is the key's name, never its value: the key is the person's own from the Add key form, typed only on " +
			"the site it was given for (the first time on a site, the person approves). A missing key gets an Add key button " +
			"in the thread. A download step clicks a link and saves the file it downloads in the workspace, shared in the thread.",
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
						"action": map[string]any{"type": "string",
							"enum": []string{"click", "fill", "fill_secret", "scroll", "wait_for", "press", "select", "hover", "download"},
							"description": "click an element; fill an input with text; fill_secret types a stored key into an input " +
								"(a password field); scroll an element into view (or, without a selector, down one screen); wait_for an " +
								"element to appear; press a key (in the element, or without a selector in the focused one); select an " +
								"option of a <select>; hover over an element; download: click an element and wait for the file it downloads."},
						"selector": map[string]any{"type": "string", "maxLength": 500,
							"description": "A CSS selector, e.g. button#load-more or input[name=q]. Needed by every action but scroll " +
								"and press, where \"\" scrolls down one screen or presses in the focused element."},
						"text": map[string]any{"type": "string", "maxLength": maxFillChars,
							"description": "fill: the text to type; fill_secret: the stored key's name (never its value); select: the " +
								"option's value or visible text; press: the key (" + pressNames + "); \"\" for the other actions."},
					},
					// Every field listed: nested objects name all their fields in required (ValidateArgs).
					"required":             []string{"action", "selector", "text"},
					"additionalProperties": false,
				},
			}},
			{Name: "screenshot", Schema: map[string]any{"type": "boolean",
				"description": "Share a screenshot of the page (as it is after the steps) in the thread. Default false."}},
			tools.IntProp("offset", "Where to start in the page's text: the offset a previous result gave (default 0).", 0, tools.MaxFetchBytes),
			tools.StrProp("session", "A name for a browser session to restore before the page opens and keep after the steps "+
				"(letters, digits, '.', '_' and '-'), e.g. vendor-portal: a login done in one call is still there in the person's "+
				"next calls with the same name. Omit it for a fresh browser that keeps nothing.", 1, 63),
			{Name: "end_session", Schema: map[string]any{"type": "boolean",
				"description": "With session: after the steps (a logout, say), forget the session: its cookies and storage are deleted. Default false."}},
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
	Session    string `json:"session"`
	EndSession bool   `json:"end_session"`
}

// checkSteps refuses the steps' mistakes before anything runs.
func checkSteps(steps []step) error {
	for i, s := range steps {
		if s.Selector == "" && s.Action != "scroll" && s.Action != "press" {
			return tools.ArgErrorf(Browse, "step %d (%s) needs a selector", i+1, s.Action)
		}
		switch s.Action {
		case "fill":
			if s.Text == "" {
				return tools.ArgErrorf(Browse, "step %d (fill) needs the text to type", i+1)
			}
		case "fill_secret":
			if _, ok := secrets.NormalizeService(s.Text); !ok {
				return tools.ArgErrorf(Browse, "step %d (fill_secret) needs in text the name of a stored key (letters, digits, '.', '_' "+
					"and '-', as the Add key form stored it), never the key itself", i+1)
			}
		case "select":
			if s.Text == "" {
				return tools.ArgErrorf(Browse, "step %d (select) needs the option's value or visible text", i+1)
			}
		case "press":
			if _, ok := pressKey(s.Text); !ok {
				return tools.ArgErrorf(Browse, "step %d (press) cannot press %q; text names one key: %s", i+1, tools.Truncate(s.Text, 40), pressNames)
			}
		}
	}
	return nil
}

func (b *Browser) browse(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args browseArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if err := checkSteps(args.Steps); err != nil {
		return tools.Output{}, err
	}
	if args.EndSession && args.Session == "" {
		return tools.Output{}, tools.ArgErrorf(Browse, "end_session needs the session's name in session")
	}
	if args.Session != "" {
		name, ok := normalSessionName(args.Session)
		if !ok {
			return tools.Output{}, tools.ArgErrorf(Browse, "%q is not a session name: use letters, digits, '.', '_' and '-' (at most 63), e.g. vendor-portal",
				tools.Truncate(args.Session, 80))
		}
		args.Session = name
		if b.sessions == nil {
			return tools.Output{}, tools.ArgErrorf(Browse, "browser sessions are not available on this worker (it has no state store); call again without session")
		}
		if !personRE.MatchString(inv.User) {
			return tools.Output{}, tools.ArgErrorf(Browse, "a browser session belongs to a person, and this request is nobody's; call again without session")
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
	attach, stop, err := b.checkKeys(ctx, inv, u, args.Steps)
	if stop != nil || err != nil {
		if err != nil {
			return tools.Output{}, err
		}
		return *stop, nil
	}
	if hold, err := b.dataGuard(ctx, inv, u, forms, args.Steps, attach); hold != nil || err != nil {
		if err != nil {
			return tools.Output{}, err
		}
		return *hold, nil
	}
	if err := b.hosts.CheckURL(ctx, u); err != nil {
		return tools.Output{}, web.RefusePrivate(shown)
	}
	// Approved: the keys the person agreed to type on this site are bound to it (as a connect
	// binds a key to its server), so the next calls type them without asking.
	for _, key := range attach {
		if _, err := b.creds.Bind(ctx, inv.Team, key, secrets.Origin(u)); err != nil {
			return tools.Output{}, fmt.Errorf("attach the key %s to %s: %w", key, secrets.Origin(u), err)
		}
	}

	opts := renderOpts{secret: b.secretFor(inv)}
	var sess loaded
	if args.Session != "" {
		// One tab per session in this worker: a second call on it waits for the first, within the
		// call's own limit.
		wctx, cancel := context.WithTimeout(ctx, b.sessionWait())
		release, err := b.sessions.acquire(wctx, inv.Team, inv.User, args.Session)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return tools.Output{}, ctx.Err()
			}
			return tools.ToolError("The browser session %q is in use by another call that is still running (a session has one tab), "+
				"and it stayed busy for %s. Nothing was opened: call again when that call has finished.", args.Session, b.sessionWait().Round(time.Second)), nil
		}
		defer release()
		if sess, err = b.sessions.load(ctx, inv.Team, inv.User, args.Session); err != nil {
			return tools.Output{}, err
		}
		if sess.found {
			opts.restore = &sess.state
		}
		opts.keep = !args.EndSession
	}

	page, err := b.render(ctx, u.String(), args.Steps, args.Screenshot, opts)
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
		return tools.ToolError("could not open %s in the browser: %s", shown, secrets.Scrub(err.Error(), page.typed...)), nil
	}
	note := b.keepSession(ctx, inv, args, sess, page)
	out, err := b.result(ctx, inv, shown, args, page)
	if err != nil {
		return tools.Output{}, err
	}
	out.Content = secrets.Scrub(note+out.Content, page.typed...)
	return out, nil
}

// sessionWait bounds a call's wait for its session's tab.
func (b *Browser) sessionWait() time.Duration {
	if b.sessionWaitFor > 0 {
		return b.sessionWaitFor
	}
	return b.limits.Total
}

// keepSession saves (or, with end_session, deletes) the call's session and says so in a line of the
// result: never a cookie, only how many.
func (b *Browser) keepSession(ctx context.Context, inv tools.Invocation, args browseArgs, sess loaded, page rendered) string {
	if args.Session == "" {
		return ""
	}
	var sb strings.Builder
	switch {
	case sess.found:
		fmt.Fprintf(&sb, "Session: %s, restored (%d cookie(s)).\n", args.Session, len(sess.state.Cookies))
	case sess.dropped != "":
		fmt.Fprintf(&sb, "Session: %s, started anew: the stored one was deleted because %s.\n", args.Session, sess.dropped)
	default:
		fmt.Fprintf(&sb, "Session: %s, new.\n", args.Session)
	}
	// A store that fails now is reported in the result, not retried as the call's error: a retry
	// would run the steps (a login, a form) again.
	if args.EndSession {
		if _, err := b.sessions.end(ctx, inv.Team, inv.User, args.Session); err != nil {
			fmt.Fprintf(&sb, "[Session %s could NOT be ended (%v): call again with end_session to delete it.]\n", args.Session, err)
			return sb.String()
		}
		fmt.Fprintf(&sb, "Session %s ended: its cookies and storage were deleted.\n", args.Session)
		return sb.String()
	}
	if page.session == nil {
		return sb.String()
	}
	dropped, err := b.sessions.save(ctx, inv.Team, inv.User, args.Session, *page.session)
	if err != nil {
		fmt.Fprintf(&sb, "[Session %s could NOT be kept (%v): the next call starts without this login.]\n", args.Session, err)
		return sb.String()
	}
	fmt.Fprintf(&sb, "Session %s kept: %d cookie(s)", args.Session, len(page.session.Cookies))
	if dropped {
		sb.WriteString(" (its site storage was over 1 MB and was not kept)")
	}
	fmt.Fprintf(&sb, ", for your later calls with session %q until %s unused.\n", args.Session, humanTTL(b.sessions.ttl))
	return sb.String()
}

// dataGuard holds the call for a person's approval when its URL carries data the run has not seen
// (as lucy_web_fetch does), or when its fill steps type text that carries data: a form a page asks
// the model to fill is as good a way out for the run's data as a URL. The fills of a call are judged
// together (judgeFills), with the URL when the model put it together. The approval's guard covers
// the URL and the steps, so an approved call runs exactly as approved, and one approval covers both
// holds.
//
// attach are the stored keys the steps type on a site they were not given for (checkKeys): that
// too waits for the person, in the same approval.
func (b *Browser) dataGuard(ctx context.Context, inv tools.Invocation, u *url.URL, forms []string, steps []step, attach []string) (*tools.Output, error) {
	guard := callGuard(u, steps)
	if inv.Approved && inv.Guard == guard {
		return nil, nil
	}
	hold, err := b.dataHold(ctx, inv, u, forms, steps)
	if err != nil || len(attach) == 0 {
		return hold, err
	}
	keys := "`" + strings.Join(attach, "`, `") + "`"
	origin := secrets.Origin(u)
	line := fmt.Sprintf("The steps also type your stored key %s into this site (%s), which it was not given for: once you approve, "+
		"it is attached to %s and typed there in later calls without asking.", tools.MrkdwnEscape(keys), tools.MrkdwnEscape(origin), tools.MrkdwnEscape(origin))
	if hold != nil {
		hold.NeedsApproval.Summary += " " + line
		return hold, nil
	}
	return &tools.Output{Content: fmt.Sprintf("Nothing was changed: the page was not opened, because the steps type the stored key %s on %s, "+
		"which it was not given for, so it needs the person's approval.", keys, origin),
		NeedsApproval: &tools.ApprovalNeed{Summary: fmt.Sprintf("I'd like to sign in to *%s* by typing your stored key %s there. %s "+
			"Approve only if this is the site the key is for.", tools.MrkdwnEscape(u.Hostname()), tools.MrkdwnEscape(keys), line),
			Details: "The address:\n```\n" + fence(u.String()) + "\n```", Guard: guard}}, nil
}

// callGuard is the approval guard of a call: its URL and its steps, so an approved call runs
// exactly as approved.
func callGuard(u *url.URL, steps []step) string {
	return tools.TextHash(fmt.Sprintf("%s\n%s\n%+v", Browse, u.String(), steps))
}

// dataHold is the hold of a call whose URL or fills carry data (dataGuard), nil when none.
func (b *Browser) dataHold(ctx context.Context, inv tools.Invocation, u *url.URL, forms []string, steps []step) (*tools.Output, error) {
	target := u.String()
	guard := callGuard(u, steps)
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
	if err := b.saveDownloads(ctx, inv, page, &out); err != nil {
		return tools.Output{}, err
	}
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
	out.Artifacts = append(out.Artifacts, shared.Artifacts...)
	out.IsError = out.IsError || shared.IsError
	return out, nil
}

// saveDownloads keeps the files the download steps fetched in the workspace under downloads/, shared
// in the thread as a generated file is. A name already taken gets the time added, so that a
// download never waits to replace another file.
func (b *Browser) saveDownloads(ctx context.Context, inv tools.Invocation, page rendered, out *tools.Output) error {
	for _, p := range page.downloadProblems {
		out.Content += "\n[Download: " + p + ".]"
	}
	if len(page.downloads) == 0 {
		return nil
	}
	if b.files == nil {
		out.Content += "\n[The downloads were not kept: there is no workspace to keep them in.]"
		return nil
	}
	st, err := b.files.Store(inv.Team)
	if err != nil {
		return err
	}
	for _, d := range page.downloads {
		rel := "downloads/" + d.name
		if _, err := st.Stat(ctx, inv.Team, rel); err == nil {
			ext := path.Ext(d.name)
			rel = fmt.Sprintf("downloads/%s-%s%s", strings.TrimSuffix(d.name, ext), time.Now().UTC().Format("20060102-150405"), ext)
		}
		shared, err := b.files.SaveAndShare(ctx, inv, Browse, rel, d.data, files.HumanBytes(int64(len(d.data))), "this download")
		if err != nil {
			return err
		}
		out.Content += "\n\nDownload: " + shared.Content
		out.Artifacts = append(out.Artifacts, shared.Artifacts...)
		out.IsError = out.IsError || shared.IsError
	}
	return nil
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
	page, err := b.render(ctx, u.String(), nil, false, renderOpts{})
	if err != nil {
		return "", "", err
	}
	_, text = web.PageMarkdown(page.html, page.base())
	return page.finalURL, text, nil
}
