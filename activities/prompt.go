package activities

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/steps"
	"go.temporal.io/sdk/temporal"
)

var fsReadFile = fs.ReadFile

// PromptInput says what goes into the system prompt of a run.
type PromptInput struct {
	Team    string   `json:"team"`
	Modules []string `json:"modules,omitempty"` // prompts/modules/<name>.md
	// Context the model should know; all of it is plain, non-secret data resolved earlier.
	TeamName    string `json:"teamName,omitempty"`
	ChannelName string `json:"channelName,omitempty"`
	IsDM        bool   `json:"isDm,omitempty"`
	UserName    string `json:"userName,omitempty"`
	UserTZ      string `json:"userTz,omitempty"`
	Now         string `json:"now"` // workflow time, RFC 3339
	Surface     string `json:"surface,omitempty"`
	// SubAgentPrompt, for a sub-agent, is its task prompt (sub_agents/<name>.md): the prompt is then the
	// light persona (SOUL_LITE.md) and that file instead of SOUL + SYSTEM_CORE + modules.
	SubAgentPrompt string `json:"subAgentPrompt,omitempty"`
	// Scheduled: the run is a recurring job's firing (the prompt then says no one is
	// waiting in the thread).
	Scheduled bool `json:"scheduled,omitempty"`
	// Channel, User and Message select the team memory block's notes: the channel's, the
	// requester's, the entities the request names and the notes most relevant to it. Message is the
	// request's text, cut to maxMessageForMemory by the workflow (MemoryMessage). Empty for runs
	// started before they existed: the block then has the workspace's notes only.
	Channel string `json:"channel,omitempty"`
	User    string `json:"user,omitempty"`
	Message string `json:"message,omitempty"`
	// Skills are the skills the route matched to the request (Route.Skills): loaded whole.
	Skills []string `json:"skills,omitempty"`
	// ViewingChannel is the channel the person is looking at in Slack (Message.ContextChannel).
	ViewingChannel string `json:"viewingChannel,omitempty"`
}

// maxMessageForMemory bounds the request text PromptInput carries for the memory block's relevance.
const maxMessageForMemory = 1000

// MemoryMessage is the part of a request's text PromptInput.Message carries.
func MemoryMessage(text string) string { return slackwire.Head(text, maxMessageForMemory) }

// SystemPrompt is the assembled system prompt.
type SystemPrompt struct {
	Text string `json:"text"`
	// Hash identifies the prompt version (file contents), for logs and for resume checks.
	Hash string `json:"hash"`
}

// MaxKnowledgeChars caps a team's knowledge notes in the prompt.
const MaxKnowledgeChars = 12000

// BuildSystemPrompt assembles SOUL + SYSTEM_CORE + modules + the team's knowledge notes + context.
// It runs as an activity so that a prompt edit never changes what a running workflow replays.
func (a *Activities) BuildSystemPrompt(ctx context.Context, in PromptInput) (SystemPrompt, error) {
	var parts []string
	base := []string{"SOUL.md", "SYSTEM_CORE.md"}
	if in.SubAgentPrompt != "" {
		name, ok := strings.CutPrefix(in.SubAgentPrompt, "sub_agents/")
		if !ok || strings.ContainsAny(name, "/\\") || !strings.HasSuffix(name, ".md") {
			return SystemPrompt{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("sub-agent prompt %q is not a file under prompts/sub_agents/", in.SubAgentPrompt), ErrConfig, nil)
		}
		base = []string{"SOUL_LITE.md", in.SubAgentPrompt}
	}
	for _, name := range base {
		s, err := a.prompt(name)
		if err != nil {
			return SystemPrompt{}, err
		}
		parts = append(parts, strings.TrimSpace(s))
	}
	mods := append([]string(nil), in.Modules...)
	sort.Strings(mods)
	for _, m := range mods {
		if strings.ContainsAny(m, "/\\.") {
			continue
		}
		s, err := fsReadFile(a.Prompts, "modules/"+m+".md")
		if err != nil {
			a.Log.Warn().Str("module", m).Msg("prompt module not found; skipped")
			continue
		}
		parts = append(parts, strings.TrimSpace(string(s)))
	}
	if k := a.knowledge(in.Team); k != "" {
		parts = append(parts, "# Workspace knowledge\n\n"+k)
	}
	// The capabilities' blocks (the team's integrations, its memory, the skills, a first contact):
	// each decides what it writes for a sub-agent or a scheduled run.
	pc := steps.PromptContext{Team: in.Team, Channel: in.Channel, User: in.User, UserName: in.UserName, UserTZ: in.UserTZ,
		Message: in.Message, IsDM: in.IsDM, Scheduled: in.Scheduled, SubAgent: in.SubAgentPrompt != "", Skills: in.Skills}
	for _, s := range a.Sections {
		for _, block := range s.PromptSections(ctx, &pc) {
			if block != "" {
				parts = append(parts, block)
			}
		}
	}
	in.UserTZ = pc.UserTZ // a recorded time zone fills in one Slack did not give this time
	parts = append(parts, contextSection(in))
	text := strings.Join(parts, "\n\n")
	return SystemPrompt{Text: text, Hash: shortHash(text)}, nil
}

func contextSection(in PromptInput) string {
	var b strings.Builder
	b.WriteString("# Context\n")
	if in.Now != "" {
		fmt.Fprintf(&b, "- Current time: %s\n", in.Now)
	}
	switch {
	case in.Surface == "terminal":
		b.WriteString("- You are talking in Lucy's local terminal workspace (no real Slack channel).\n")
	case in.IsDM:
		b.WriteString("- This is a direct message.\n")
	case in.ChannelName != "":
		fmt.Fprintf(&b, "- Channel: #%s\n", in.ChannelName)
	}
	if in.TeamName != "" {
		fmt.Fprintf(&b, "- Workspace: %s\n", in.TeamName)
	}
	if viewedChannel.MatchString(in.ViewingChannel) {
		fmt.Fprintf(&b, "- The person is looking at the channel <#%s> in Slack: when they say \"this channel\" or \"here\", "+
			"they mean it.\n", in.ViewingChannel)
	}
	if in.UserName != "" {
		fmt.Fprintf(&b, "- You are talking with %s", in.UserName)
		if in.UserTZ != "" {
			fmt.Fprintf(&b, " (time zone %s)", in.UserTZ)
		}
		b.WriteString(".\n")
	}
	if in.Scheduled {
		b.WriteString("- This is a scheduled run of a recurring job, not a live conversation: nobody is waiting in the " +
			"thread. Carry out the instruction and answer with the result, ready to read; ask a question only if you " +
			"truly cannot go on, and then expect the answer to come late.\n")
	}
	return strings.TrimSpace(b.String())
}

// KnowledgeDir is the folder of a team's knowledge notes (Markdown files loaded into every run's
// system prompt): DataDir/knowledge/<team>/. It is outside DataDir/workspaces/, the only folder the file
// tools can write (each through an os.Root on the team's workspace, which neither ".." nor a symbolic
// link can leave): a note steers every later run of the team, so only the operator may write one,
// never the model, whose writes a fetched web page can direct.
func KnowledgeDir(dataDir, team string) string {
	return filepath.Join(dataDir, "knowledge", team)
}

// legacyKnowledgeDir is where notes lived before: inside the team's workspace, where the tools could
// write them. It is never read for the prompt; notes found there are reported (warnLegacyKnowledge).
func legacyKnowledgeDir(dataDir, team string) string {
	return filepath.Join(dataDir, "workspaces", team, "knowledge")
}

// knowledge reads the team's knowledge notes: Markdown files in KnowledgeDir.
func (a *Activities) knowledge(team string) string {
	if a.DataDir == "" || team == "" || strings.ContainsAny(team, "/\\.") {
		return ""
	}
	a.warnLegacyKnowledge(team)
	dir := KnowledgeDir(a.DataDir, team)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries { // os.ReadDir sorts by name
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", strings.TrimSuffix(e.Name(), ".md"), strings.TrimSpace(string(data)))
		if b.Len() > MaxKnowledgeChars {
			break
		}
	}
	return slackwire.HeadEllipsis(strings.TrimSpace(b.String()), MaxKnowledgeChars)
}

// warnLegacyKnowledge logs once per team and worker process when the team's old knowledge folder holds
// notes: an operator who kept notes there must learn that they are no longer loaded, and where they
// go now, rather than lose them silently. They are not loaded from there, not even once: the model
// could have written them.
func (a *Activities) warnLegacyKnowledge(team string) {
	if _, seen := a.legacyKnowledge.LoadOrStore(team, true); seen {
		return
	}
	old := legacyKnowledgeDir(a.DataDir, team)
	entries, err := os.ReadDir(old)
	if err != nil {
		return
	}
	var notes []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			notes = append(notes, e.Name())
		}
	}
	if len(notes) == 0 {
		return
	}
	a.Log.Warn().Str("team", team).Str("oldDir", old).Str("newDir", KnowledgeDir(a.DataDir, team)).
		Strs("notes", notes).
		Msg("knowledge notes in " + old + " are no longer loaded into the system prompt: Lucy's file tools can " +
			"write that folder, so a web page could plant instructions there. Review each note (the model may " +
			"have written or changed it), then move the ones you trust to " + KnowledgeDir(a.DataDir, team))
}

// viewedChannel is a channel ID the prompt may name as the one the person looks at: a channel, not a
// DM (someone else's conversation is not context for this one).
var viewedChannel = regexp.MustCompile(`^[CG][A-Z0-9]{2,20}$`)
