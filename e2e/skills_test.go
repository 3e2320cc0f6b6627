package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/schedules"
)

// A member's skill end to end: a person asks Lucy to remember how they do something; she saves it with
// lucy_save_skill, whose approval prompt shows the whole SKILL.md and says it is the person's own;
// the person approves; in a new thread the skill is listed in their prompt, a request that names it
// gets it loaded, the model loads it with lucy_load_skill too, and the answer follows it. A member's
// skill is hers (kept in Lucy's state store, not the team's workspace): team skills are an admin's
// to save (e2e/guard_skills_test.go). The person's first request also carries the
// first-contact introduction, and only that one; the team's workspace is scaffolded.
func TestTeamSkillSavedApprovedListedLoadedFollowed(t *testing.T) {
	const instructions = "1. Read the channel with lucy_get_channel_history.\n2. List who is blocked.\n3. End with the line: DIGEST-OK"
	var mu sync.Mutex
	var firstContact []bool // per main-agent request, whether its prompt asked for an introduction
	var digestSystem string
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 {
			return fakellm.Reply{Content: "1. Do it."} // the planner, the supervisor, the gates
		}
		sys := req.Messages[0].Text()
		last := req.Messages[len(req.Messages)-1]
		user := lastUserText(req)
		mu.Lock()
		if last.Role == "user" {
			firstContact = append(firstContact, strings.Contains(sys, "# First contact"))
		}
		mu.Unlock()
		switch {
		case strings.Contains(user, "remember how we do the standup digest"):
			if last.Role == "tool" {
				return fakellm.Reply{Content: "Done: " + last.Text()}
			}
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("s1", "lucy_save_skill",
				`{"name":"standup-digest","description":"Write the standup digest of a channel: who is blocked, what shipped.","instructions":`+
					jsonString(instructions)+`}`)}}
		case strings.Contains(user, "standup digest for #general"):
			mu.Lock()
			digestSystem = sys
			mu.Unlock()
			if last.Role == "tool" {
				// Follow what the loaded skill says: its last step.
				if strings.Contains(last.Text(), "End with the line: DIGEST-OK") {
					return fakellm.Reply{Content: "Nobody is blocked this week.\nDIGEST-OK"}
				}
				return fakellm.Reply{Content: "The skill did not load: " + last.Text()}
			}
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("l1", "lucy_load_skill", `{"name":"standup-digest"}`)}}
		}
		return fakellm.Reply{Content: "ok"}
	})

	ts := s.say("<@ULUCY> remember how we do the standup digest: read the channel, list who is blocked, end with DIGEST-OK", "")
	s.event("app_mention", "EvR", "<@ULUCY> remember how we do the standup digest: read the channel, list who is blocked, end with DIGEST-OK", ts, "", human)
	var value string
	s.waitFor("the approval prompt", 60*time.Second, func() bool {
		value = s.approvalValue(ts)
		return value != ""
	})
	// The prompt shows the whole SKILL.md.
	var shown strings.Builder
	for _, m := range s.botMessages(ts) {
		shown.WriteString(m.Text + string(m.Blocks))
	}
	for _, want := range []string{"standup-digest", "your own skill", "name: standup-digest", "List who is blocked.", "End with the line: DIGEST-OK"} {
		if !strings.Contains(shown.String(), want) {
			t.Errorf("approval prompt does not show %q", want)
		}
	}
	skillFile := filepath.Join(s.cfg.DataDir, "workspaces", team, "skills", "standup-digest", "SKILL.md")
	if _, err := os.Stat(skillFile); !os.IsNotExist(err) {
		t.Fatalf("SKILL.md written before the approval: %v", err)
	}
	s.click(human, value, "lucy_approve")
	s.waitFor("the saved answer", 60*time.Second, func() bool { return s.answered(ts, "Saved standup-digest as the requester's own skill") })
	if _, err := os.Stat(skillFile); !os.IsNotExist(err) {
		t.Fatalf("a member's own skill was written into the team's workspace: %v", err)
	}
	// The first contact scaffolded the team's workspace.
	if _, err := os.Stat(filepath.Join(s.cfg.DataDir, "workspaces", team, "skills", "README.md")); err != nil {
		t.Errorf("workspace not scaffolded: %v", err)
	}

	ts2 := s.say("<@ULUCY> the standup digest for #general please", "")
	s.event("app_mention", "EvD2", "<@ULUCY> the standup digest for #general please", ts2, "", human)
	s.waitFor("the digest", 60*time.Second, func() bool { return s.answered(ts2, "DIGEST-OK") })
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(digestSystem, "- standup-digest (personal): Write the standup digest") {
		t.Error("the person's skill is not listed in their next thread's prompt")
	}
	if !strings.Contains(digestSystem, `<skill name="standup-digest" source="personal">`) {
		t.Error("a request naming the skill did not get it loaded into the prompt")
	}
	if len(firstContact) < 2 || !firstContact[0] {
		t.Fatalf("first contact per request: %v; want the first to introduce", firstContact)
	}
	for i, fc := range firstContact[1:] {
		if fc {
			t.Errorf("request %d asked for an introduction again", i+2)
		}
	}
}

// "What are you working on?" as a new top-level message answers for the whole workspace: the run
// busy in another thread, and the next firing of a recurring job, found through the visibility
// query on LucyWorkspace and the schedules' list.
func TestWorkspaceStatusOutsideAThread(t *testing.T) {
	hold := make(chan struct{})
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if strings.Contains(lastUserText(req), "quarterly numbers") {
			return fakellm.Reply{Content: "All done.", Hold: hold}
		}
		return fakellm.Reply{Content: "ok"}
	})
	defer close(hold)
	s.mustTool(t, s.cronTools(), human, schedules.CreateCron,
		`{"name":"weekly digest","schedule":"0 9 * * 1","instruction":"Post the weekly digest."}`, "cron:T1:weekly-digest")

	ts := s.say("<@ULUCY> compile the quarterly numbers", "")
	s.event("app_mention", "EvQ", "<@ULUCY> compile the quarterly numbers", ts, "", human)
	s.waitFor("the model call", 30*time.Second, func() bool { return len(s.llm.Requests()) > 0 })
	// The run is visible to the visibility query once its search attributes are indexed.
	s.waitFor("the run in visibility", 30*time.Second, func() bool {
		return s.count("WorkflowType = 'agent_run' AND ExecutionStatus = 'Running' AND LucyWorkspace = '"+team+"'") == 1
	})

	q := s.say("<@ULUCY> what are you working on?", "")
	s.event("app_mention", "EvW", "<@ULUCY> what are you working on?", q, "", human)
	s.waitFor("the workspace status", 30*time.Second, func() bool { return s.answered(q, "Across this workspace") })
	var answer string
	for _, m := range s.botMessages(q) {
		answer += m.Text + "\n"
	}
	for _, want := range []string{"working on 1 request", "<#" + channel + ">", "compile the quarterly numbers", "Scheduled:",
		"job `weekly-digest`", ": next "} {
		if !strings.Contains(answer, want) {
			t.Errorf("workspace status lacks %q:\n%s", want, answer)
		}
	}
	// In the busy thread, the answer stays the thread's.
	q2 := s.say("<@ULUCY> what are you working on?", ts)
	s.event("message", "EvW2", "<@ULUCY> what are you working on?", q2, ts, human)
	s.waitFor("the thread status", 30*time.Second, func() bool { return s.answered(ts, "I'm working on:") })
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
