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
	s, err := c.Get(ctx, inv.Team, name)
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
	if s.Source == Team {
		fmt.Fprintf(&b, ", %s in the workspace", path.Join(TeamDir, s.Name, FileName))
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
		Description: "Save a team skill: written instructions for a task this team does often (\"remember how we do the " +
			"weekly report\"), so that later requests follow them. Write the steps as the team described them, with the " +
			"tools to use. A person approves the whole skill before it is saved; saving a name that exists replaces " +
			"that skill for this team.",
		Human: "saving a team skill",
	},
	Required: []string{"name", "description", "instructions"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("name", "Lowercase letters, digits and single hyphens, at most 64 characters, e.g. \"weekly-report\".", 1, MaxNameLen),
			tools.StrProp("description", "What the skill does and when to use it, in one or two sentences (the Skills "+
				"list shows it, and requests are matched against it).", 1, MaxDescriptionLen),
			tools.StrProp("instructions", "The steps in Markdown: what to gather, with which tools, what to produce and "+
				"in which form, where to post or save it.", 1, MaxInstructionsChars),
		}
	},
}, (*Catalog).save)

// lucy_save_skill is not declared Destructive: its approval is asked by the tool itself
// (Output.NeedsApproval), after it has checked the call, so that the prompt can say what the save
// replaces (the team's current version, or a built-in skill of that name), which only a read of the
// stores knows, and so that a call with a mistake is refused before anyone is asked. The call is run
// again once approved, with the Guard of what the person saw.

type saveArgs struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Instructions string `json:"instructions"`
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
	rel := path.Join(TeamDir, name, FileName)
	current, _, err := c.workspace.Read(ctx, inv.Team, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Output{}, fmt.Errorf("read %s: %w", rel, err)
	}
	shadowed := c.Shadowed(name)
	// The guard is what the person approves: this content, replacing what is there now, over this
	// built-in skill. If any of it changes while they decide, they are asked again.
	guard := "sha256:" + Hash([]byte(fmt.Sprintf("%s\x00%s\x00%d", Hash([]byte(content)), Hash(current), shadowed)))
	if !inv.Approved || inv.Guard != guard {
		summary, details := saveApproval(name, content, current, shadowed)
		return tools.Output{
			Content:       fmt.Sprintf("Nothing was changed: saving the team skill %s needs a person's approval of its whole text.", name),
			NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard},
		}, nil
	}
	if err := c.Save(ctx, inv.Team, name, []byte(content), inv.User, inv.RunID); err != nil {
		return tools.ToolError("the skill %s was not saved: %v", name, err), nil
	}
	return tools.Output{
		Content: fmt.Sprintf("Saved the team skill %s at %s, as approved. It is listed under Skills from the next request "+
			"on, and requests that name it load it.", name, rel),
		Artifacts: []string{rel},
	}, nil
}

// saveApproval is the approval prompt of a save: what it replaces, and the SKILL.md whole.
func saveApproval(name, content string, current []byte, shadowed Source) (string, string) {
	summary := fmt.Sprintf("I'd like to save the team skill `%s`: later requests that fit it will follow these instructions.", name)
	if current != nil {
		summary += fmt.Sprintf(" It *replaces the team's current version* (%d lines).", strings.Count(string(current), "\n")+1)
	}
	switch shadowed {
	case Platform:
		summary += " It *replaces Lucy's built-in skill of that name* for this team."
	case Operator:
		summary += " It *replaces the operator's skill of that name* for this team."
	}
	where := "`" + path.Join(TeamDir, name, FileName) + "` in the workspace:\n"
	if strings.Contains(content, "```") {
		return summary, where + content
	}
	return summary, where + "```\n" + strings.TrimRight(content, "\n") + "\n```"
}
