package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/devserver"
	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/workflows"
)

// The Temporal server restarted in the middle of a run, the worker (`lucy worker`) staying up: the
// model call in flight when the server went away completes, the worker reconnects by itself, and the
// run answers once.
func TestServerRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server twice")
	}
	dataDir := t.TempDir()
	tport, uiport := freePort(t), freePort(t)
	startServer := func() *devserver.Server {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		srv, err := devserver.Start(ctx, devserver.Options{DataDir: dataDir, FrontendPort: tport, UIPort: uiport, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := startServer()
	defer func() { srv.Stop() }()
	// As an operator does once for a cluster: `lucy worker` refuses a namespace without them.
	registerSearchAttributes(t, srv.FrontendAddress())

	ls, slackURL := localslack.NewTestServer(t, localslack.Options{Token: "xoxb-test", Team: "T1"})
	inFlight, release := make(chan struct{}, 1), make(chan struct{})
	llm := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		if n == 1 {
			inFlight <- struct{}{}
			<-release // the server restarts while this call is in flight
		}
		return fakellm.Reply{Content: "The plan has three phases."}
	})
	env := envOf(map[string]string{
		"TEMPORAL_ADDRESS": fmt.Sprintf("127.0.0.1:%d", tport), "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slackURL,
		"OPENAI_BASE_URL": llm.BaseURL(), "OPENAI_API_KEY": "sk-test", "LUCY_MODEL_DEFAULT": "m", "LUCY_DATA_DIR": t.TempDir(),
		"LUCY_LOG_LEVEL": "error", "LUCY_WORKER_HTTP_ADDR": "127.0.0.1:0", "LUCY_SECRETS_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
	})
	w := startLucy(t, "worker", env)

	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", tport)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bot := slack.New("xoxb-test", slack.OptionAPIURL(slackURL))
	_, ts, err := bot.PostMessage("CLOCAL", slack.MsgOptionText("summarize the launch plan", false), slack.MsgOptionAsUser(false))
	if err != nil {
		t.Fatal(err)
	}
	h := gateway.NewTemporalHandoff(c, signing.FromBotToken("xoxb-test"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Message(ctx, workflows.Message{EventID: "Ev1", Team: "T1", Channel: "CLOCAL", TS: ts, ThreadTS: ts,
		User: "ULOCAL", Text: "<@ULUCY> summarize the launch plan", Kind: "app_mention"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inFlight:
	case <-time.After(2 * time.Minute):
		t.Fatal("the model was never called")
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	srv = startServer()
	close(release)
	answered := func() bool {
		for _, m := range ls.Messages("CLOCAL", ts) {
			if m.BotID != "" && strings.Contains(m.Text, "three phases") {
				return true
			}
		}
		return false
	}
	waitFor(t, "the answer after the server restart", 3*time.Minute, answered)
	n := 0
	for _, m := range ls.Messages("CLOCAL", ts) {
		if m.BotID != "" && strings.Contains(m.Text, "three phases") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d answers, want 1", n)
	}
	w.stop(t)
}

// registerSearchAttributes registers Lucy's search attributes on the server at addr.
func registerSearchAttributes(t *testing.T, addr string) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := searchattr.Register(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
}
