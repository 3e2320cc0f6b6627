package skills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/tools"
)

// The tools' names: wire names (the model's transcript, history), listed among the fixed names in
// docs/architecture.md.
const (
	LoadTool = "lucy_load_skill"
	SaveTool = "lucy_save_skill"
)

// MaxInstructionsChars bounds the instructions lucy_save_skill writes: they are shown whole in the
// approval prompt and loaded whole into prompts.
const MaxInstructionsChars = 20000

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: LoadTool,
		Description: "Load a skill: the full instructions for a kind of task, listed by name in the system prompt " +
			"under Skills. Call it before starting a task that fits a skill, then follow the instructions. The result " +
			"also names the files beside the skill (templates, examples); give file to read one of them.",
		Idempotent: true,
		Human:      "reading a skill",
	},
	Required: []string{"name"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("name", "The skill's name, as the Skills list gives it, e.g. \"weekly-report\".", 1, MaxNameLen),
			tools.StrProp("file", "Optional: a file beside the skill to read instead of its instructions, relative to the "+
				"skill's folder, e.g. \"templates/report.md\".", 1, tools.MaxPathLen),
		}
	},
}, (*Catalog).load)

type loadArgs struct {
	Name string `json:"name"`
	File string `json:"file"`
}

func (c *Catalog) load(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args loadArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	name := strings.TrimSpace(args.Name)
	if err := ValidateName(name); err != nil {
		return tools.Output{}, tools.ArgErrorf(LoadTool, "%v", err)
	}
	s, err := c.Get(ctx, inv.Team, inv.User, name)
	if err != nil {
		return tools.ToolError("%v", err), nil
	}
	if f := strings.TrimSpace(args.File); f != "" {
		data, err := c.ReadFile(ctx, inv.Team, s, f)
		if err != nil {
			return tools.ToolError("%v", err), nil
		}
		if !utf8.Valid(data) {
			return tools.ToolError("%s of skill %s is not a text file (%d bytes).", f, s.Name, len(data)), nil
		}
		text, _, _ := tools.Window(string(data), 0, tools.ReadWindowBytes)
		return tools.Output{Content: fmt.Sprintf("File %s of skill %s:\n\n%s", f, s.Name, text)}, nil
	}
	return tools.Output{Content: LoadedText(s)}, nil
}

// LoadedText is what lucy_load_skill answers: the skill's name, where it comes from, its
// instructions whole, and the files beside it.
func LoadedText(s Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s (%s", s.Name, s.Source)
	switch s.Source {
	case Team:
		fmt.Fprintf(&b, ", %s in the workspace", path.Join(TeamDir, s.Name, FileName))
	case Personal:
		b.WriteString(": the requester's own, used in their requests only")
	}
	fmt.Fprintf(&b, "): %s\n\nFollow these instructions:\n\n%s\n", oneLine(s.Description, MaxDescriptionLen), s.Body)
	if len(s.Files) > 0 {
		fmt.Fprintf(&b, "\nFiles beside it (%s): %s\n", readHint(s), strings.Join(s.Files, ", "))
	}
	return strings.TrimSpace(b.String())
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: SaveTool,
		Description: "Save a skill: written instructions for a task done often (\"remember how we do the weekly report\"), so " +
			"that later requests follow them. Write the steps as the person described them, with the tools to use. A skill is " +
			"the requester's own (used in their requests only) unless for_team is true, which only an admin may ask for: " +
			"then it is the team's, used in everyone's requests. A team skill is changed only by whoever saved it or an " +
			"admin, and a personal skill cannot take the name of a skill the team has. A person approves the whole skill, " +
			"and for a team skill every file of its folder, before it is saved; saving a name that exists replaces it.",
		Human: "saving a skill",
	},
	Required: []string{"name", "description", "instructions"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("name", "Lowercase letters, digits and single hyphens, at most 64 characters, e.g. \"weekly-report\".", 1, MaxNameLen),
			tools.StrProp("description", "What the skill does and when to use it, in one or two sentences (the Skills "+
				"list shows it, and requests are matched against it).", 1, MaxDescriptionLen),
			tools.StrProp("instructions", "The steps in Markdown: what to gather, with which tools, what to produce and "+
				"in which form, where to post or save it.", 1, MaxInstructionsChars),
			{Name: "for_team", Schema: map[string]any{"type": "boolean", "description": "True to save it for the whole team " +
				"(everyone's requests use it; only an admin may, or the person who saved that team skill when changing it). " +
				"False or absent: the requester's own skill."}},
		}
	},
}, (*Catalog).save)

// lucy_save_skill is not declared Destructive: its approval is asked by the tool itself
// (Output.NeedsApproval), after it has checked the call and the requester's rights, so that the
// prompt can say whose skill it is and what the save replaces (the current version, a built-in
// skill of that name, the files of the folder), which only a read of the stores knows, and so that a
// call with a mistake or without the right is refused before anyone is asked. The call is run again
// once approved, with the Guard of what the person saw.
//
// Rights, not the approval, decide what reaches other people: the approval is the requester's own
// (it stops text injected into the run, not a member acting on purpose). So a member's skill is
// hers; only an admin saves one for the team (and so shadows a platform or operator skill for it);
// a team skill is replaced only by its author or an admin. A member saving her own skill under the
// name of a team, operator or platform skill is refused rather than given a copy that shadows it in
// her runs only: in a shared channel "the weekly report" would otherwise mean different instructions
// depending on who asks, and the member would believe she had changed the team's. The refusal says
// who may change it and that another name is hers to take.

type saveArgs struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Instructions string `json:"instructions"`
	ForTeam      bool   `json:"for_team"`
}

func (c *Catalog) save(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args saveArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	name := strings.TrimSpace(args.Name)
	if err := ValidateName(name); err != nil {
		return tools.Output{}, tools.ArgErrorf(SaveTool, "%v", err)
	}
	if err := ValidateDescription(args.Description); err != nil {
		return tools.Output{}, tools.ArgErrorf(SaveTool, "%v", err)
	}
	if strings.TrimSpace(args.Instructions) == "" {
		return tools.Output{}, tools.ArgErrorf(SaveTool, "instructions are empty: write the steps of the task")
	}
	if c.workspace == nil || c.state == nil {
		return tools.Output{}, errors.New("lucy_save_skill needs the workspace store and Lucy's state store (skills.Deps)")
	}
	content := Render(name, args.Description, args.Instructions)
	if _, err := Parse([]byte(content), name); err != nil {
		return tools.Output{}, tools.ArgErrorf(SaveTool, "%v", err)
	}
	if inv.User == "" {
		return tools.ToolError("Nothing was saved: this run works for nobody in particular (no requester), and a skill is " +
			"saved for the person who asks."), nil
	}
	rel := path.Join(TeamDir, name, FileName)
	current, _, err := c.workspace.Read(ctx, inv.Team, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Output{}, fmt.Errorf("read %s: %w", rel, err)
	}
	rec, recorded, err := c.record(ctx, inv.Team, name)
	if err != nil {
		return tools.Output{}, err
	}
	shadowed := c.Shadowed(name)
	if refusal := c.mayNotSave(inv.User, name, args.ForTeam, rec, recorded, current != nil, shadowed); refusal != "" {
		return tools.ToolError("%s", refusal), nil
	}
	if !args.ForTeam {
		return c.savePersonal(ctx, inv, name, content)
	}
	files, err := c.besideFiles(ctx, inv.Team, name)
	var ue userError
	if errors.As(err, &ue) {
		return tools.ToolError("The skill %s was not saved: %v", name, ue.error), nil
	}
	if err != nil {
		return tools.Output{}, err
	}
	sums := sumsOf(files)
	// The guard is what the person approves: this content and these files beside it, for the team,
	// replacing what is there now, over this built-in skill. If any of it changes while they decide,
	// they are asked again.
	guard := "sha256:" + Hash([]byte(fmt.Sprintf("team\x00%s\x00%s\x00%d", FolderHash(Hash([]byte(content)), sums), Hash(current), shadowed)))
	if !inv.Approved || inv.Guard != guard {
		summary, details := teamApproval(name, content, current, rec, recorded, shadowed, files)
		return tools.Output{
			Content: fmt.Sprintf("Nothing was changed: saving the skill %s for the team needs a person's approval of its whole "+
				"text and the files of its folder.", name),
			NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard},
		}, nil
	}
	if err := c.saveTeam(ctx, inv.Team, name, []byte(content), sums, inv.User, inv.RunID); err != nil {
		return tools.ToolError("the skill %s was not saved: %v", name, err), nil
	}
	return tools.Output{
		Content: fmt.Sprintf("Saved the team skill %s at %s, as approved, for everyone in this workspace. It is listed under "+
			"Skills from the next request on, and requests that name it load it.", name, rel),
		Artifacts: []string{rel},
	}, nil
}

// mayNotSave is why user may not save the skill name with that scope, "" when she may. recorded
// says whether the team has an approval record of name (rec); inWorkspace, whether its SKILL.md is
// in the workspace; shadowed, the platform or operator skill of that name.
func (c *Catalog) mayNotSave(user, name string, forTeam bool, rec approval, recorded, inWorkspace bool, shadowed Source) string {
	admin := c.IsAdmin(user)
	author := recorded && rec.By != "" && rec.By == user
	if forTeam {
		switch {
		case admin || author:
			return ""
		case recorded:
			return fmt.Sprintf("Nothing was saved: %s is a team skill saved by %s; only they or an admin (LUCY_ADMIN_USERS) can "+
				"change it for the team. The requester can save their version under another name as their own skill "+
				"(used in their requests only), or ask for the team's to be changed.", name, who(rec.By))
		}
		return fmt.Sprintf("Nothing was saved: only an admin (LUCY_ADMIN_USERS) can save a skill for the whole team%s. "+
			"Without for_team, the skill is the requester's own: used in their requests only, and an admin can save it "+
			"for the team later.", shadowNote(shadowed))
	}
	if recorded && inWorkspace {
		change := "only they or an admin can change it for the team"
		if admin || author {
			change = "the requester may change it for the team: save it with for_team"
		}
		return fmt.Sprintf("Nothing was saved: the team has a skill named %s (saved by %s), and a personal skill cannot take "+
			"the name of one the team has, so that the name means the same instructions whoever asks; %s. The requester "+
			"can save their version under another name as their own skill.", name, who(rec.By), change)
	}
	if shadowed != 0 {
		return fmt.Sprintf("Nothing was saved: %s is the name of %s, and a personal skill cannot take the name of one the "+
			"team has, so that the name means the same instructions whoever asks. The requester can save their version "+
			"under another name as their own skill; an admin can replace it for the whole team.", name, shadowName(shadowed))
	}
	return ""
}

func who(user string) string {
	if user == "" {
		return "someone before authors were recorded"
	}
	return "<@" + user + ">"
}

func shadowName(src Source) string {
	if src == Platform {
		return "Lucy's built-in skill"
	}
	return "the operator's skill"
}

func shadowNote(src Source) string {
	if src == 0 {
		return ""
	}
	return " or replace " + shadowName(src) + " of that name for it"
}

// savePersonal asks for the approval of the requester's own skill, then saves it: a page the model
// read must not plant instructions in her later runs either.
func (c *Catalog) savePersonal(ctx context.Context, inv tools.Invocation, name, content string) (tools.Output, error) {
	cur, found, err := c.personal(ctx, inv.Team, inv.User, name)
	if err != nil {
		return tools.Output{}, err
	}
	var current []byte
	if found {
		current = []byte(cur.Content)
	}
	guard := "sha256:" + Hash([]byte(fmt.Sprintf("personal\x00%s\x00%s\x00%s", inv.User, Hash([]byte(content)), Hash(current))))
	if !inv.Approved || inv.Guard != guard {
		summary := fmt.Sprintf("I'd like to save `%s` as *your own skill*: your later requests that fit it will follow these "+
			"instructions. It is used in your requests only, not in anyone else's.", name)
		if found {
			summary += fmt.Sprintf(" It *replaces your current version* (%d lines).", strings.Count(cur.Content, "\n")+1)
		}
		return tools.Output{
			Content:       fmt.Sprintf("Nothing was changed: saving the skill %s needs a person's approval of its whole text.", name),
			NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: "Kept in Lucy's own store, not in the workspace:\n" + fenced(content), Guard: guard},
		}, nil
	}
	if err := c.SavePersonal(ctx, inv.Team, inv.User, name, []byte(content), inv.RunID); err != nil {
		return tools.ToolError("the skill %s was not saved: %v", name, err), nil
	}
	return tools.Output{Content: fmt.Sprintf("Saved %s as the requester's own skill, as approved: it is listed under Skills "+
		"in their requests from the next one on (not in anyone else's). An admin can save it for the whole team.", name)}, nil
}

// teamApproval is the approval prompt of a save for the team: that it is for everyone, what it
// replaces, the SKILL.md whole, and every file of the folder whole (they become part of the skill).
func teamApproval(name, content string, current []byte, rec approval, recorded bool, shadowed Source, files []besideFile) (string, string) {
	summary := fmt.Sprintf("I'd like to save the skill `%s` *for the whole team*: everyone's later requests that fit it will "+
		"follow these instructions.", name)
	if current != nil {
		by := ""
		if recorded && rec.By != "" {
			by = ", saved by <@" + rec.By + ">"
		}
		summary += fmt.Sprintf(" It *replaces the team's current version* (%d lines%s).", strings.Count(string(current), "\n")+1, by)
	}
	switch shadowed {
	case Platform:
		summary += " It *replaces Lucy's built-in skill of that name* for this team."
	case Operator:
		summary += " It *replaces the operator's skill of that name* for this team."
	}
	if len(files) > 0 {
		summary += fmt.Sprintf(" The %d other files of its folder become part of it (shown below).", len(files))
	}
	var b strings.Builder
	b.WriteString("`" + path.Join(TeamDir, name, FileName) + "` in the workspace:\n" + fenced(content))
	for _, f := range files {
		fmt.Fprintf(&b, "\n\n`%s` (%d bytes)", path.Join(TeamDir, name, f.Rel), len(f.Data))
		switch old, ok := rec.Files[f.Rel]; {
		case !recorded:
		case !ok:
			b.WriteString(", *not in the version approved before*")
		case old != Hash(f.Data):
			b.WriteString(", *changed since the version approved before*")
		}
		if !utf8.Valid(f.Data) {
			fmt.Fprintf(&b, ": not text (SHA-256 %s); lucy_load_skill never reads it as text.", Hash(f.Data))
			continue
		}
		b.WriteString(":\n" + fenced(string(f.Data)))
	}
	return summary, b.String()
}

// fenced is text in a code block, or as it is when it holds a fence itself.
func fenced(text string) string {
	if strings.Contains(text, "```") {
		return text
	}
	return "```\n" + strings.TrimRight(text, "\n") + "\n```"
}
