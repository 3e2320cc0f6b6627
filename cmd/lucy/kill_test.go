package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// envDevProcess makes the test binary run `lucy dev` instead of the tests (TestMain), so that a test
// can kill it with SIGKILL, server, worker and gateway at once, as a crash or the OOM killer would.
const envDevProcess = "LUCY_TEST_DEV_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(envDevProcess) == "1" {
		os.Exit(run(context.Background(), []string{"dev"}, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// `lucy dev` killed with SIGKILL while a model call is in flight, then started again on the same
// data directory: the conversation is answered exactly once. This is what the embedded server's
// SQLite settings promise (WAL, synchronous=NORMAL: devserver/sqlite.go): a crash of the process
// loses no commit.
func TestDevKilledMidRunAnswersOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts lucy dev twice")
	}
	inFlight, killed := make(chan struct{}, 1), make(chan struct{})
	llm := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			inFlight <- struct{}{}
			<-killed // the process dies with this call in flight
		}
		return fakellm.Reply{Content: "The plan has three phases."}
	})
	dataDir := t.TempDir()
	env := []string{
		envDevProcess + "=1", "LUCY_DATA_DIR=" + dataDir, "LUCY_TEMPORAL_PORT=" + fmt.Sprint(freePort(t)),
		"LUCY_UI_PORT=" + fmt.Sprint(freePort(t)), "LUCY_HTTP_ADDR=127.0.0.1:" + fmt.Sprint(freePort(t)),
		"OPENAI_BASE_URL=" + llm.BaseURL(), "LUCY_MODEL_DEFAULT=fake", "LUCY_LOG_LEVEL=warn",
	}
	first := startDevProcess(t, env)
	if _, err := io.WriteString(first.stdin, "summarize the launch plan\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inFlight:
	case <-time.After(time.Minute):
		t.Fatalf("the model was never called: %s", first.out.String())
	}
	first.kill()
	close(killed)

	second := startDevProcess(t, env)
	defer second.kill()
	local, err := readLocalWorkspace(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	api := slack.New(local.Token, slack.OptionAPIURL(local.URL))
	answers := func() int {
		hist, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "CLOCAL", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, root := range hist.Messages {
			if root.Text != "summarize the launch plan" {
				continue
			}
			replies, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "CLOCAL", Timestamp: root.Timestamp})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range replies {
				if m.BotID != "" && strings.Contains(m.Text, "three phases") {
					n++
				}
			}
		}
		return n
	}
	restarted := time.Now()
	waitFor(t, "the answer after the restart", 2*time.Minute, func() bool { return answers() > 0 })
	t.Logf("answered %v after the restart", time.Since(restarted).Round(100*time.Millisecond))
	time.Sleep(2 * time.Second) // a second answer, if any, would come right after the first
	if n := answers(); n != 1 {
		t.Errorf("%d answers in the thread, want 1", n)
	}
}

// killableDev is `lucy dev` in a process of its own, its terminal on pipes.
type killableDev struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *syncBuffer
	exited chan struct{}
}

// startDevProcess starts `lucy dev` in a new process and waits for its banner.
func startDevProcess(t *testing.T, env []string) *killableDev {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	p := &killableDev{cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)
	waitFor(t, "the startup banner", 3*time.Minute, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("lucy dev exited: %s", p.out.String())
		default:
		}
		return strings.Contains(p.out.String(), "Gateway: terminal")
	})
	return p
}

// kill ends the process with SIGKILL: no deferred function, no graceful stop, no flush.
func (p *killableDev) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// `lucy dev` killed with SIGKILL while the answer streams into the local workspace (server, worker,
// gateway and the local Slack at once), then started again on the same data directory: the local
// workspace comes back from its journal with the half stream in it, the retried model call removes
// it (or, below a tool step, the timeline keeps it and delivery rewrites it), and the thread ends
// with exactly one complete answer and no sentence of it twice.
func TestDevKilledMidStreamAnswersOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts lucy dev twice")
	}
	t.Run("answer", func(t *testing.T) { killMidStream(t, false) })
	// The terminal prints the step's task card; the answer streams into the timeline's message.
	t.Run("after a tool step", func(t *testing.T) { killMidStream(t, true) })
}

func killMidStream(t *testing.T, toolStep bool) {
	var sentences []string
	for i := range 30 {
		sentences = append(sentences, fmt.Sprintf("Step %02d of the rollout moves one more team to the new pipeline.", i+1))
	}
	answer := strings.Join(sentences, " ")
	stalled, never := make(chan struct{}), make(chan struct{})
	paused, resume := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(never) })
	var mu sync.Mutex
	calls := 0
	llm := fakellm.New(t, fakellm.WithoutNotes(func(_ int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; toolStep && last.Role != "tool" {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_current_time", `{"timezone":"Europe/Paris"}`)}}
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch calls {
		case 1: // the first attempt stalls mid-answer until its process dies
			return fakellm.Reply{Content: answer, ChunkChars: 25, StallAt: 1000, Stall: never, Stalled: stalled}
		case 2: // the retry pauses past the first attempt's text, for the thread to be looked at
			return fakellm.Reply{Content: answer, ChunkChars: 25, StallAt: 1500, Stall: resume, Stalled: paused}
		}
		return fakellm.Reply{Content: answer, ChunkChars: 25}
	}))
	go func() {
		select {
		case <-paused:
			time.Sleep(2 * time.Second)
			close(resume)
		case <-never:
		}
	}()
	dataDir := t.TempDir()
	env := []string{
		envDevProcess + "=1", "LUCY_DATA_DIR=" + dataDir, "LUCY_TEMPORAL_PORT=" + fmt.Sprint(freePort(t)),
		"LUCY_UI_PORT=" + fmt.Sprint(freePort(t)), "LUCY_HTTP_ADDR=127.0.0.1:" + fmt.Sprint(freePort(t)),
		"OPENAI_BASE_URL=" + llm.BaseURL(), "LUCY_MODEL_DEFAULT=fake", "LUCY_LOG_LEVEL=warn",
	}
	const request = "explain the rollout plan"
	first := startDevProcess(t, env)
	if _, err := io.WriteString(first.stdin, request+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stalled:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the model was never asked for a streamed answer: %s", first.out.String())
	}
	// Lucy's messages in the request's thread, read from the local workspace of the process that
	// runs now (each start has its own port and token).
	replies := func() []slack.Message {
		local, err := readLocalWorkspace(dataDir)
		if err != nil {
			return nil
		}
		api := slack.New(local.Token, slack.OptionAPIURL(local.URL))
		hist, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "CLOCAL", Limit: 100})
		if err != nil {
			return nil
		}
		var bots []slack.Message
		for _, root := range hist.Messages {
			if root.Text != request {
				continue
			}
			msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "CLOCAL", Timestamp: root.Timestamp})
			if err != nil {
				return nil
			}
			for _, m := range msgs {
				if m.BotID != "" {
					bots = append(bots, m)
				}
			}
		}
		return bots
	}
	// The kill comes as soon as the stream shows text: before the SDK's throttled heartbeat has
	// carried the attempt's latest detail to the server, the case a retry cannot read.
	streamed := func(bots []slack.Message) bool {
		for _, m := range bots {
			if strings.Contains(m.Text, sentences[0]) {
				return true
			}
		}
		return false
	}
	waitFor(t, "the half stream in the thread", time.Minute, func() bool { return streamed(replies()) })
	if bots := replies(); streamed(bots) && strings.Contains(bots[len(bots)-1].Text, sentences[len(sentences)-1]) {
		t.Fatal("the answer was complete before the kill: the test did not kill mid-stream")
	}
	if toolStep {
		waitFor(t, "the step's task card in the terminal", 30*time.Second, func() bool {
			return strings.Contains(first.out.String(), "  [done] checking the time\n")
		})
	}
	first.kill()

	second := startDevProcess(t, env)
	defer second.kill()
	if !streamed(replies()) {
		t.Fatal("the local workspace lost the half stream across the restart: the test would prove nothing")
	}
	// What a person sees while the answer streams again counts too: no message of Lucy's may show a
	// sentence twice at any point.
	var twice string
	complete := func() bool {
		done := false
		for _, m := range replies() {
			if twice == "" && strings.Count(m.Text, sentences[0]) > 1 {
				twice = m.Text
			}
			if strings.Contains(m.Text, sentences[len(sentences)-1]) {
				done = true
			}
		}
		return done
	}
	waitFor(t, "the complete answer after the restart", 3*time.Minute, complete)
	time.Sleep(2 * time.Second) // a second answer, or a late append, would come right after
	if twice != "" {
		t.Errorf("while the answer streamed again, a message showed it twice: %.300q", twice)
	}
	bots := replies()
	var answers []slack.Message
	for _, m := range bots {
		if strings.Contains(m.Text, "Step ") {
			answers = append(answers, m)
		}
	}
	if len(answers) != 1 {
		for _, m := range bots {
			t.Logf("%s: %.120q", m.Timestamp, m.Text)
		}
		t.Fatalf("%d messages of Lucy's hold the answer, want 1", len(answers))
	}
	for _, s := range sentences {
		if n := strings.Count(answers[0].Text, s); n != 1 {
			t.Errorf("%q is %d times in the answer, want once", s, n)
		}
	}
	if len(bots) != 1 {
		for _, m := range bots {
			t.Logf("%s: %.120q", m.Timestamp, m.Text)
		}
		t.Errorf("%d messages of Lucy's in the thread, want the answer alone", len(bots))
	}
	mu.Lock()
	defer mu.Unlock()
	if calls < 2 {
		t.Errorf("%d model calls: the answer was not streamed again after the restart", calls)
	}
}
