package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lucy-agent/lucy/codec"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/workflows"
)

// With payload encryption on (LUCY_PAYLOAD_KEYS, package codec), history holds only ciphertext: the
// raw history of the lane and the run has no message text, tool result, token or key in clear. The
// worker's activities read transcript references back from history through the same converter, so a
// multi-turn run with tools completes and the model sees every earlier message and tool result.
func TestRunWithPayloadCodec(t *testing.T) {
	keys, err := codec.ParseKeys("k1:" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := codec.DataConverter(keys)
	if err != nil {
		t.Fatal(err)
	}
	s := newStackWith(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Text(), "You supervise") {
			return fakellm.Reply{Content: "C"}
		}
		if len(req.Tools) == 0 { // planner, summarizer
			return fakellm.Reply{Content: "summary"}
		}
		turn, last := 0, ""
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
			if m.Role == "tool" {
				last = m.Text()
			}
		}
		switch turn {
		case 0:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{
				fakellm.Call("c1", "lucy_current_time", `{"timezone":"Europe/Paris"}`),
				fakellm.Call("c2", "lucy_list_files", `{}`),
			}}
		case 1:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c3", "lucy_read_file", `{"path":"launch.md"}`)}}
		default:
			return fakellm.Reply{Content: "From the notes: " + strings.TrimSpace(last)}
		}
	}, dc)
	dir := filepath.Join(s.cfg.DataDir, "workspaces", team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "launch.md"), []byte("The launch moved to Thursday.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	text := "<@ULUCY> what time is it, and what do the launch notes say?"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-codec", text, ts, "", human)
	s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(ts, "The launch moved to Thursday.") })

	reqs := s.llm.Requests()
	var main []fakellm.Request
	for _, r := range reqs {
		if len(r.Tools) > 0 {
			main = append(main, r)
		}
	}
	if len(main) < 3 {
		t.Fatalf("%d agent model calls, want 3", len(main))
	}
	// The third call's transcript is resolved from history: the system prompt, the thread, both
	// earlier replies and all three tool results.
	third := main[2]
	if third.Messages[0].Role != "system" || !strings.Contains(third.Messages[0].Text(), "Lucy") {
		t.Errorf("no system prompt: %+v", third.Messages[0])
	}
	var roles []string
	tools := 0
	for _, m := range third.Messages {
		roles = append(roles, m.Role)
		if m.Role == "tool" {
			tools++
		}
	}
	if tools != 3 || !strings.Contains(lastUserText(third), "launch notes") {
		t.Errorf("third call's transcript %v lacks the message or the tool results", roles)
	}

	// History really holds codec payloads: without the codec, the activities could not have read it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts}
	it := s.client.GetWorkflowHistory(ctx, workflows.RunID(key, 1, ts), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	results := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && len(a.GetResult().GetPayloads()) > 0 {
			results++
			if enc := string(a.GetResult().GetPayloads()[0].GetMetadata()[converter.MetadataEncoding]); enc != codec.EncodingName {
				t.Errorf("activity result encoded as %q, want %s", enc, codec.EncodingName)
			}
		}
	}
	if results == 0 {
		t.Error("no activity results in the run's history")
	}
	// Nothing readable anywhere in the raw histories of the lane and the run.
	secrets := []string{"launch notes", "launch moved", "Thursday", "xoxb-test", "sk-test", secret, "Europe/Paris", "lucy_read_file"}
	for _, id := range []string{workflows.LaneID(key), workflows.RunID(key, 1, ts)} {
		for _, ev := range s.history(t, id) {
			raw, err := protojson.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			// Payload data is base64 in protojson: decode every payload too, to look inside.
			for _, sec := range secrets {
				if bytes.Contains(raw, []byte(sec)) || payloadsContain(ev, sec) {
					t.Errorf("%s event %d (%s) holds %q in clear", id, ev.GetEventId(), ev.GetEventType(), sec)
				}
			}
		}
	}
}

// payloadsContain reports whether any payload of an event holds s in its raw bytes.
func payloadsContain(ev *historypb.HistoryEvent, s string) bool {
	for _, p := range eventPayloads(ev) {
		if bytes.Contains(p.GetData(), []byte(s)) {
			return true
		}
	}
	return false
}
