package subagents

import (
	"embed"
	"errors"
	"io/fs"
	"strings"
)

// taskPrompts are the sub-agents' task prompts, one per registry row.
//
//go:embed prompts/*.md
var taskPrompts embed.FS

// promptDir is where a Spec's Prompt points: the prompt activity reads sub_agents/<name>.md from its
// prompt files. The path is recorded in every delegation's input, so it stays.
const promptDir = "sub_agents/"

// PromptFS is base (the embedded prompt files of package prompts) with the sub-agents' task prompts
// added under sub_agents/, where each Spec's Prompt names them. The worker gives it to the
// activities; this package owns the prompts, the activity reads them by the recorded path.
func PromptFS(base fs.FS) fs.FS { return promptFS{base: base} }

type promptFS struct{ base fs.FS }

func (p promptFS) Open(name string) (fs.File, error) {
	rest, ok := strings.CutPrefix(name, promptDir)
	if !ok {
		return p.base.Open(name)
	}
	f, err := taskPrompts.Open("prompts/" + rest)
	if err != nil {
		// Name the path the caller asked for, not where this package keeps the file.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
		}
		return nil, err
	}
	return f, nil
}
