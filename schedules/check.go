package schedules

// A monitor's check: one HTTP request to its URL (through the web domain's guard against private
// addresses), the condition of its kind (http, page, json) evaluated on the answer, and the
// comparison with the last state that decides whether to alert. No model runs here.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// CheckMonitor runs one check and compares it with the last state. It never calls a model. A check
// that cannot reach the URL counts as failing, with why as the evidence.
func (m *Manager) CheckMonitor(ctx context.Context, spec MonitorSpec, last MonitorState) MonitorResult {
	now := m.now().UTC()
	c := spec.Check
	ok, evidence, hash := m.evaluate(ctx, c)
	st := MonitorState{CheckedAt: now, Evidence: truncate(evidence, monitorEvidenceMax), Hash: hash, Status: "alert", Since: last.Since}
	if ok {
		st.Status = "ok"
	}
	if st.Status != last.Status {
		st.Since = now
	}
	name := spec.DisplayName()
	var alert string
	switch {
	case c.Kind == CheckPage && c.Contains == "" && c.NotContains == "":
		// A "changes" monitor: the first check records the text; every change after is an alert.
		switch {
		case hash == "": // unreadable: keep the last text's hash to compare with next time
			st.Hash = last.Hash
			if last.Status != "alert" {
				alert = fmt.Sprintf("🔴 *%s*: the page could not be read: %s.", name, evidence)
			}
		case last.Status == "alert" && last.Hash != "" && hash != last.Hash:
			alert = fmt.Sprintf("🟢 *%s*: the page can be read again, and it changed. %s", name, evidence)
		case last.Status == "alert" && last.Hash == "":
			// Never read before: this text is the first to compare with, there is nothing to say of it.
			alert = fmt.Sprintf("🟢 *%s*: the page can be read now; changes from this text will be reported.", name)
		case last.Status == "alert":
			alert = fmt.Sprintf("🟢 *%s*: the page can be read again (unchanged).", name)
		case last.Hash != "" && hash != last.Hash:
			alert = fmt.Sprintf("🔔 *%s*: the page changed. %s", name, evidence)
			st.Since = now
		}
	case last.Status == "" && st.Status == "alert":
		alert = fmt.Sprintf("🔴 *%s* is failing from its first check: %s. (%s)", name, evidence, describeCheck(c))
	case last.Status == "ok" && st.Status == "alert":
		alert = fmt.Sprintf("🔴 *%s* is failing: %s. (%s)", name, evidence, describeCheck(c))
	case last.Status == "alert" && st.Status == "ok":
		alert = fmt.Sprintf("🟢 *%s* is OK again: %s (it had failed since %s).", name, evidence, last.Since.Format("Jan 2 15:04 UTC"))
	}
	return MonitorResult{State: st, Alert: alert}
}

// DisplayName is the monitor's name for people.
func (s MonitorSpec) DisplayName() string { return firstNonEmpty(s.Name, s.Slug, "monitor") }

// evaluate fetches the URL and says whether the condition holds, with the evidence (and, for page
// monitors, the text's hash; "" when it could not be read).
func (m *Manager) evaluate(ctx context.Context, c MonitorCheck) (ok bool, evidence, hash string) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return false, "the URL cannot be read", ""
	}
	if err := m.deps.Web.CheckAddress(ctx, u); err != nil {
		return false, "the address is private", ""
	}
	if c.Kind == CheckPage && c.Render {
		return m.evaluateRendered(ctx, c, u)
	}
	cctx, cancel := context.WithTimeout(ctx, monitorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return false, err.Error(), ""
	}
	start := time.Now()
	resp, err := m.deps.Web.Fetch(req)
	latency := time.Since(start)
	if err != nil {
		if cctx.Err() != nil {
			return false, fmt.Sprintf("no answer within %s", monitorTimeout), ""
		}
		return false, "unreachable: " + truncate(tools.RedactCredentials(err.Error()), 200), ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, monitorBodyLimit))
	if err != nil {
		return false, "the answer could not be read: " + err.Error(), ""
	}
	ms := latency.Milliseconds()
	status := fmt.Sprintf("HTTP %d in %d ms", resp.StatusCode, ms)
	switch c.Kind {
	case CheckHTTP:
		good := resp.StatusCode >= 200 && resp.StatusCode < 400
		if c.ExpectStatus != 0 {
			good = resp.StatusCode == c.ExpectStatus
		}
		if !good {
			return false, status + fmt.Sprintf(" (expected %s)", expectText(c.ExpectStatus)), ""
		}
		if c.MaxLatencyMS > 0 && ms > int64(c.MaxLatencyMS) {
			return false, status + fmt.Sprintf(" (slower than %d ms)", c.MaxLatencyMS), ""
		}
		return true, status, ""
	case CheckPage:
		if resp.StatusCode >= 400 {
			return false, status, ""
		}
		text := string(body)
		if strings.Contains(strings.ToLower(resp.Header.Get("Content-Type")), "html") {
			text = m.deps.Web.PageText(text, u)
		}
		ok, evidence, hash = pageCondition(c, status, text)
		return ok, evidence, hash
	case CheckJSON:
		if resp.StatusCode >= 400 {
			return false, status, ""
		}
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			return false, status + "; the answer is not JSON", ""
		}
		v, err := lookupJSON(doc, c.Path)
		if err != nil {
			return false, fmt.Sprintf("%s; %v", status, err), ""
		}
		holds := compare(v, c.Op, c.Threshold)
		shown := strconv.FormatFloat(v, 'f', -1, 64)
		th := strconv.FormatFloat(c.Threshold, 'f', -1, 64)
		if holds {
			return false, fmt.Sprintf("%s is %s (%s %s)", c.Path, shown, c.Op, th), ""
		}
		return true, fmt.Sprintf("%s is %s (not %s %s)", c.Path, shown, c.Op, th), ""
	}
	return false, "unknown check kind " + c.Kind, ""
}

// pageCondition evaluates a page check on the page's text; status opens the evidence.
func pageCondition(c MonitorCheck, status, text string) (ok bool, evidence, hash string) {
	sum := sha256.Sum256([]byte(strings.Join(strings.Fields(text), " ")))
	hash = hex.EncodeToString(sum[:8])
	switch {
	case c.Contains != "":
		if strings.Contains(text, c.Contains) {
			return true, fmt.Sprintf("%s; the page contains %q", status, c.Contains), hash
		}
		return false, fmt.Sprintf("%s; the page no longer contains %q", status, c.Contains), hash
	case c.NotContains != "":
		if i := strings.Index(text, c.NotContains); i >= 0 {
			return false, fmt.Sprintf("%s; the page now contains %q: …%s…", status, c.NotContains, snippet(text, i, len(c.NotContains))), hash
		}
		return true, fmt.Sprintf("%s; the page does not contain %q", status, c.NotContains), hash
	}
	return true, fmt.Sprintf("%s; the text now begins: %s", status, truncate(strings.Join(strings.Fields(text), " "), 160)), hash
}

// evaluateRendered is a page check of a monitor made with render: the page opened in the browser, so
// that text its scripts build counts. The browser applies the address rule to every request.
func (m *Manager) evaluateRendered(ctx context.Context, c MonitorCheck, u *url.URL) (ok bool, evidence, hash string) {
	if m.deps.Browser == nil || !m.deps.Browser.Available() {
		return false, "no browser is installed on the worker to render the page", ""
	}
	rctx, cancel := context.WithTimeout(ctx, monitorRenderTimeout)
	defer cancel()
	start := time.Now()
	_, text, err := m.deps.Browser.PageText(rctx, u)
	ms := time.Since(start).Milliseconds()
	if err != nil {
		if rctx.Err() != nil {
			return false, fmt.Sprintf("the page did not render within %s", monitorRenderTimeout), ""
		}
		return false, "the page could not be rendered: " + truncate(tools.RedactCredentials(err.Error()), 200), ""
	}
	return pageCondition(c, fmt.Sprintf("rendered in %d ms", ms), text)
}

func expectText(code int) string {
	if code == 0 {
		return "2xx or 3xx"
	}
	return strconv.Itoa(code)
}

func snippet(s string, i, n int) string {
	from, to := max(0, i-40), min(len(s), i+n+40)
	return strings.Join(strings.Fields(s[from:to]), " ")
}

func compare(v float64, op string, t float64) bool {
	switch op {
	case "<":
		return v < t
	case "<=":
		return v <= t
	case ">":
		return v > t
	case ">=":
		return v >= t
	case "==":
		return v == t
	case "!=":
		return v != t
	}
	return false
}

// splitPath reads "data.items.0.price" or "$.data.items[0].price".
func splitPath(p string) ([]string, error) {
	p = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(p), "$"), ".")
	p = strings.NewReplacer("[", ".", "]", "").Replace(p)
	if p == "" {
		return nil, fmt.Errorf("the path is empty: give keys separated by dots, like data.price")
	}
	parts := strings.Split(p, ".")
	for _, part := range parts {
		if part == "" {
			return nil, fmt.Errorf("the path %q has an empty step", p)
		}
	}
	return parts, nil
}

// lookupJSON finds the number at path.
func lookupJSON(doc any, path string) (float64, error) {
	parts, err := splitPath(path)
	if err != nil {
		return 0, err
	}
	cur := doc
	for i, part := range parts {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[part]
			if !ok {
				return 0, fmt.Errorf("%s has no %q", strings.Join(parts[:i], ".")+"(root)", part)
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 || n >= len(x) {
				return 0, fmt.Errorf("%q is not an index of a list of %d", part, len(x))
			}
			cur = x[n]
		default:
			return 0, fmt.Errorf("cannot look up %q in a %T", part, cur)
		}
	}
	switch x := cur.(type) {
	case float64:
		return x, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return f, nil
		}
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("the value at %s is not a number", path)
}
