package openapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/lucy-agent/lucy/tools/tooltest"
)

// githubDescription is GitHub's REST description as GitHub publishes it (13 MB, 811 paths, 47 tags;
// testdata/README.md says where it comes from), kept compressed.
func githubDescription(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open("testdata/api.github.com.json.zst")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	data, err := io.ReadAll(dec)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// serveDocument serves data as a published document is served, with its length.
func serveDocument(t testing.TB, data []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api.github.com.json"
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// GitHub's REST description connects one tag in seconds, and the worker's heap goes back to where it
// started: the 13 MB document is streamed, only the tag's paths and the components they reach are
// loaded, and nothing of the document is kept but the pruned part in the record. Its two paths that
// differ only in a parameter's name (orgs' and users' attestations) do not refuse it. The figures
// are printed (go test -v -run TestGitHubDescription).
func TestGitHubDescriptionConnectsATag(t *testing.T) {
	data := githubDescription(t)
	if len(data) < 12<<20 {
		t.Fatalf("the test data is %d bytes, not GitHub's 13 MB description", len(data))
	}
	url := serveDocument(t, data)
	e := newEnv(t, envOpts{maxOps: 60})

	// Every tag with its number of operations, under the size a result reaches the model whole
	// (agent.ToolResultSummaryThreshold, 8,000 characters: workflows/agent/limits.go).
	out := e.mustRun(t, ResolveTool, args(t, map[string]any{"url": url, "name": "github"}))
	tooltest.WantOK(t, out, "Nothing was connected", "the API has 1223 operations", "47 tags", "actions: 187", "repos: 204",
		"rate-limit: 1", "emojis: 1", "copilot-spaces: 28", "issues: 58")
	var described struct {
		Paths map[string]map[string]struct {
			Tags []string `json:"tags"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(data, &described); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, item := range described.Paths {
		for method, op := range item {
			if method == "parameters" {
				continue
			}
			for _, tag := range op.Tags {
				count[tag]++
			}
		}
	}
	if len(count) != 47 {
		t.Fatalf("the description's operations have %d tags, want 47", len(count))
	}
	for tag, n := range count {
		tooltest.WantContains(t, out.Content, fmt.Sprintf("%s: %d", tag, n))
	}
	if n := len([]rune(out.Content)); n > 8000 {
		t.Errorf("the tag list is %d characters, over the 8,000 above which a cheap model summarizes it", n)
	}

	before := tooltest.HeapInUse()
	start := time.Now()
	var res string
	var prompt string
	peak := tooltest.HeapPeak(func() {
		o, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": url, "name": "github", "operations": []string{"issues"}}))
		res, prompt = o.Content, need.Details
	})
	took := time.Since(start)
	e.later()
	if got := len(e.toolNames(t)); got != 58 {
		t.Errorf("%d tools, want the 58 operations of issues", got)
	}
	after := tooltest.HeapInUse()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("GitHub's description (%s): the tag issues connected (asked, then approved: two reads) in %v; heap in use after GC "+
		"%s before, %s after (%+.1f MiB, the service's record and tools in this worker's cache); peak while resolving %s; "+
		"heap held from the OS %s", mib(uint64(len(data))), took.Round(time.Millisecond), mib(before), mib(after),
		(float64(after)-float64(before))/(1<<20), mib(peak), mib(ms.HeapSys-ms.HeapReleased))
	// Without this worker's cache of the team's services (read again from the registry on the next
	// run), nothing of the resolve is left.
	e.svc.forget(tooltest.Team)
	dropped := tooltest.HeapInUse()
	t.Logf("with the cache of the team's services dropped: %s (%+.1f MiB from before)", mib(dropped), (float64(dropped)-float64(before))/(1<<20))
	if dropped > before+8<<20 {
		t.Errorf("the heap grew by %s and stayed with no service cached: the resolve keeps what it read", mib(dropped-before))
	}
	tooltest.WantContains(t, res, "Connected github", "with 58 tools", "lucy_custom_github_issues_list_for_repo")
	tooltest.WantContains(t, prompt, "Run without asking", "GET /repos/{owner}/{repo}/issues")
	if after > before+32<<20 {
		t.Errorf("the heap grew by %s and stayed: the resolve keeps what it read", mib(after-before))
	}
	if took > 60*time.Second {
		t.Errorf("connecting one tag took %v", took)
	}

	// The attestations' paths: the later one is left out, said in the answer and in the prompt; the
	// other connects.
	o, need := e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": url, "name": "attest",
		"operations": []string{"orgs/delete-attestations-by-id", "orgs/list-attestations"}}))
	tooltest.WantContains(t, o.Content, "Connected attest", "with 1 tools", "DELETE /orgs/{org}/attestations/{attestation_id}",
		"Left out: GET /orgs/{org}/attestations/{subject_digest} (its path is the same as /orgs/{org}/attestations/{attestation_id}")
	tooltest.WantContains(t, need.Details, "Left out", "GET /orgs/{org}/attestations/{subject_digest}")
	if strings.Contains(o.Content, "not valid OpenAPI") {
		t.Errorf("the document was refused: %s", o.Content)
	}
	// Chosen without its twin, the later path connects.
	o, _ = e.resolveAs(t, "ULOCAL", args(t, map[string]any{"url": url, "name": "attest", "operations": []string{"orgs/list-attestations"}}))
	tooltest.WantContains(t, o.Content, "Reconnected attest", "with 1 tools", "GET /orgs/{org}/attestations/{subject_digest}")
}
