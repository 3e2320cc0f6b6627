package openapi

import (
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lucy-agent/lucy/tools/tooltest"
)

// BenchmarkResolveRetained: what a worker keeps once a resolve of GitHub's REST description (13 MB,
// testdata/api.github.com.json.zst) returned, its cache of the team's services included (read
// again, as the next run's tools are): listing its tags, connecting the tag issues (asked, then
// approved: two reads of the document), and listing the tags of the same description as YAML (read
// whole and converted to JSON). The figure to read is retained-MiB (tooltest.ReportRetained).
func BenchmarkResolveRetained(b *testing.B) {
	data := githubDescription(b)
	b.Run("tags", func(b *testing.B) {
		e := newEnv(b, envOpts{maxOps: 60})
		url := serveDocument(b, data)
		tooltest.ReportRetained(b, func(b *testing.B) {
			out, err := e.callAs(b, "ULOCAL", ResolveTool, args(b, map[string]any{"url": url, "name": "github"}), false, "")
			if err != nil || !strings.Contains(out.Content, "47 tags") {
				b.Fatalf("%v %+v", err, out)
			}
		})
	})
	b.Run("issues", func(b *testing.B) {
		e := newEnv(b, envOpts{maxOps: 60})
		url := serveDocument(b, data)
		tooltest.ReportRetained(b, func(b *testing.B) {
			o, _ := e.resolveAs(b, "ULOCAL", args(b, map[string]any{"url": url, "name": "github", "operations": []string{"issues"}}))
			if !strings.Contains(o.Content, "with 58 tools") {
				b.Fatalf("%+v", o)
			}
			e.later()
			if n := len(e.toolNames(b)); n != 58 {
				b.Fatalf("%d tools, want 58", n)
			}
		})
		e.svc.mu.Lock()
		b.Logf("the team's services count %.2f MB in the worker's cache (cachedSize; bounded by maxCachedBytes, %d MB)",
			float64(e.svc.cachedBytes)/1e6, maxCachedBytes>>20)
		e.svc.mu.Unlock()
	})
	b.Run("yaml-tags", func(b *testing.B) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		y, err := yaml.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		v = nil
		e := newEnv(b, envOpts{maxOps: 60})
		url := serveDocument(b, y)
		tooltest.ReportRetained(b, func(b *testing.B) {
			out, err := e.callAs(b, "ULOCAL", ResolveTool, args(b, map[string]any{"url": url, "name": "github"}), false, "")
			if err != nil || !strings.Contains(out.Content, "47 tags") {
				b.Fatalf("%v %+v", err, out)
			}
		})
	})
}
