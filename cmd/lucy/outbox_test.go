package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
)

// `lucy dev` with Slack over HTTP acknowledges an event from its outbox beside the server's files
// and hands it to the thread right behind: the mention is answered, and the outbox is empty again.
func TestDevAcknowledgesSlackFromItsOutbox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	llm := fakellm.New(t, fakellm.WithoutNotes(func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Paris is the capital of France."}
	}))
	slackSrv, slackURL := localslack.NewTestServer(t, localslack.Options{
		Token: "xoxb-dev", UserTokens: map[string]string{"xoxp-ada": "U1"}, Team: "T1", Users: []localslack.User{{ID: "U1", Name: "ada"}}, Channels: []localslack.Channel{{ID: "C1", Name: "general"}},
	})
	const secret = "dev-signing-secret"
	tport, uiport, hport := freePort(t), freePort(t), freePort(t)
	dataDir := t.TempDir()
	p := startDev(t, envOf(map[string]string{
		"LUCY_DATA_DIR": dataDir, "LUCY_TEMPORAL_PORT": fmt.Sprint(tport), "LUCY_UI_PORT": fmt.Sprint(uiport),
		"LUCY_HTTP_ADDR": fmt.Sprintf("127.0.0.1:%d", hport), "OPENAI_BASE_URL": llm.BaseURL(), "LUCY_MODEL_DEFAULT": "fake",
		"LUCY_LOG_LEVEL": "warn", "SLACK_BOT_TOKEN": "xoxb-dev", "SLACK_SIGNING_SECRET": secret, "SLACK_API_URL": slackURL,
	}))
	waitForGateway(t, p, "Gateway: Slack Events API")
	if _, err := os.Stat(filepath.Join(dataDir, gateway.OutboxFile)); err != nil {
		t.Fatalf("no outbox beside the server's files: %v", err)
	}

	// A person mentions Lucy in #general; Slack sends the event, signed.
	text := "<@ULUCY> what is the capital of France?"
	human := slack.New("xoxp-ada", slack.OptionAPIURL(slackURL))
	_, ts, err := human.PostMessage("C1", slack.MsgOptionText(text, false))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"token": "x", "team_id": "T1", "api_app_id": "ALUCY", "type": "event_callback", "event_id": "Ev-dev-1", "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": "U1", "text": text, "ts": ts, "channel": "C1", "event_ts": ts, "channel_type": "channel"},
	})
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/slack/events", hport), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	localslack.Sign(req, body, secret, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("event acknowledged with %d", resp.StatusCode)
	}
	waitFor(t, "Lucy's answer in the thread", 2*time.Minute, func() bool {
		for _, m := range slackSrv.Messages("C1", ts) {
			if m.BotID != "" && strings.Contains(m.Text, "Paris is the capital") {
				return true
			}
		}
		return false
	})
	db, err := sql.Open("sqlite", filepath.Join(dataDir, gateway.OutboxFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pending int
	if err := db.QueryRow(`SELECT count(*) FROM pending`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("%d messages left in the outbox after the answer (%v), want 0", pending, err)
	}
	p.stop(t)
}
