package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// workerProc is a worker in a process of its own, which the test kills with SIGKILL.
type workerProc struct {
	cmd *exec.Cmd
}

// startWorkerProcess starts a worker process configured as the stack's worker, with env added.
func (s *stack) startWorkerProcess(t *testing.T, env ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envWorkerProcess+"=1",
		"TEMPORAL_ADDRESS="+s.frontend, "TEMPORAL_NAMESPACE="+s.cfg.TemporalNamespace,
		"SLACK_BOT_TOKEN=xoxb-test", "SLACK_API_URL="+s.slackURL,
		"OPENAI_BASE_URL="+s.llm.BaseURL(), "OPENAI_API_KEY=sk-test", "LUCY_MODEL_DEFAULT=model-default",
		"LUCY_DATA_DIR="+s.cfg.DataDir, "LUCY_LOG_LEVEL=error", "LUCY_SECRETS_KEY="+workerProcessSecretsKey,
	)
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProc{cmd: cmd}
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *workerProc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_, _ = p.cmd.Process.Wait()
	}
}

// workerProcessSecretsKey is LUCY_SECRETS_KEY of the worker processes: a test that stores a
// credential for them seals it with this key.
const workerProcessSecretsKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

var requestNumber = regexp.MustCompile(`request #(\d+)`)

// Twenty multi-tool runs (a CSV, the clock, the file list, an answer) while the worker process is
// killed with SIGKILL at random moments and a new one started each time: every run completes with
// exactly one answer and one shared file. A run whose CSV was in flight when its worker died waits
// for an operator (the tool has side effects; Lucy does not repeat it blindly): the test resumes it
// with "retry", as an operator would, and the repeated call shares nothing twice.
func TestWorkerKilledAtRandomPoints(t *testing.T) {
	const trials, kills = 20, 6
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		time.Sleep(150 * time.Millisecond) // a model that takes a moment, so kills land mid-run
		first := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				first = m.Text()
				break
			}
		}
		k := "0"
		if m := requestNumber.FindStringSubmatch(first); m != nil {
			k = m[1]
		}
		turns := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turns++
			}
		}
		switch turns {
		case 0:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{
				fakellm.Call("c1", "lucy_generate_csv", fmt.Sprintf(`{"filename":"report-%s.csv","rows":[["request","%s"]]}`, k, k)),
				fakellm.Call("c2", "lucy_current_time", `{}`),
			}}
		case 1:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c3", "lucy_list_files", `{}`)}}
		}
		return fakellm.Reply{Content: "Finished request #" + k + "."}
	})
	s.stopWorker()
	var mu sync.Mutex
	proc := s.startWorkerProcess(t)

	roots := make([]string, trials)
	for i := range trials {
		text := fmt.Sprintf("<@ULUCY> make the report for request #%d", i+1)
		roots[i] = s.say(text, "")
		s.event("app_mention", fmt.Sprintf("Ev-crash-%d", i+1), text, roots[i], "", human)
	}
	done := make(chan struct{})
	killed := make(chan int, 1)
	go func() {
		n := 0
		defer func() { killed <- n }()
		// The first kill lands while the first model calls are in flight: the twenty runs take about
		// a second in all (three calls of 150 ms each, at once), so a first delay drawn from the
		// later ones' range could come after the last answer.
		for deadline := time.Now().Add(time.Minute); len(s.llm.Requests()) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return
			}
		}
		delay := time.Duration(rand.IntN(300)) * time.Millisecond
		for range kills {
			select {
			case <-done:
				return
			case <-time.After(delay):
			}
			delay = time.Duration(300+rand.IntN(1700)) * time.Millisecond
			mu.Lock()
			proc.kill()
			proc = s.startWorkerProcess(t)
			n++
			mu.Unlock()
		}
	}()

	resumed := map[string]bool{}
	answered := func(i int) bool { return s.answered(roots[i], fmt.Sprintf("Finished request #%d.", i+1)) }
	s.waitFor("every run to answer", 5*time.Minute, func() bool {
		all := true
		for i := range trials {
			if answered(i) {
				continue
			}
			all = false
			// An interrupted CSV: resume it as an operator would.
			if s.answered(roots[i], "can't tell whether it went through") {
				if run := s.lastRunOrEmpty(roots[i]); run != "" && !resumed[run] {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					if err := s.client.SignalWorkflow(ctx, run, "", workflows.SignalResume, workflows.Resume{Action: workflows.ResumeRetry}); err == nil {
						resumed[run] = true
					}
					cancel()
				}
			}
		}
		return all
	})
	close(done)
	n := <-killed
	for i, root := range roots {
		answers, files := 0, 0
		for _, m := range s.botMessages(root) {
			if strings.Contains(m.Text, fmt.Sprintf("Finished request #%d.", i+1)) {
				answers++
			}
			files += len(m.Files)
		}
		if answers != 1 || files != 1 {
			t.Errorf("request #%d: %d answers and %d shared files, want 1 and 1", i+1, answers, files)
		}
	}
	t.Logf("%d runs, %d SIGKILLs of the worker, %d runs resumed by an operator after an interrupted CSV", trials, n, len(resumed))
	if n == 0 {
		t.Error("the worker was never killed: the test proved nothing")
	}
}
