// Package script holds lucy_run_script: JavaScript, Python or bash the model writes, run in the
// sandbox (package sandbox) over the team's workspace files. It is its own package because it alone starts a child
// process; it reaches the files only through the files domain's *files.Workspace.
package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
)

// lucy_run_script (tools.RunScript) runs JavaScript the model writes in the sandbox (package sandbox):
// no network, no host files, only the team's workspace through a `files` object, under time, CPU,
// memory and output limits. Python and bash (language) run under bubblewrap on a copy of the
// workspace (native.go), where the kernel can confine them.

// Sandbox runs the scripts: the command of the sandbox's child process, its limits, and the
// workspace it works on.
type Sandbox struct {
	ws     *files.Workspace
	cmd    sandbox.Command
	limits sandbox.Limits
	// native are the limits of Python and bash scripts: limits with the floors the interpreters
	// need (sandbox.NativeLimits), zero for those.
	native sandbox.Limits
}

// New returns the script domain over ws. A zero cmd means this executable (which must run
// sandbox.Main when sandbox.EnvChild is set, as cmd/lucy and the tests do); zero limits mean
// sandbox.DefaultLimits.
func New(ws *files.Workspace, cmd sandbox.Command, limits sandbox.Limits) *Sandbox {
	base := limits
	if base.Wall <= 0 {
		base = sandbox.DefaultLimits
	}
	return &Sandbox{ws: ws, cmd: cmd, limits: limits, native: sandbox.NativeLimits(base)}
}

// nativeAvailable is sandbox.NativeAvailable; a test replaces it to see the refusal where this
// machine can run Python.
var nativeAvailable = sandbox.NativeAvailable

// MaxScriptChars bounds a script's source.
const MaxScriptChars = 100_000

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.RunScript,
		Description: "Run a program in a sandbox to compute, parse or transform data, or chart it. language javascript " +
			"(the default) is ES2020 with no network and no modules (no require, fetch or process); it can read and write the team's workspace " +
			"files through `files.read(path)`, `files.write(path, text)` (new files only, or ones this script " +
			"wrote), `files.list(dir)` and `files.exists(path)`, and print with console.log. The result is what it " +
			"printed and the value of its last expression. Limits: about 10 s, 512 MB, 64 KB of output. language " +
			"python (pandas, numpy, matplotlib, openpyxl) or bash (coreutils) runs in the workspace folder with no " +
			"network, where this server's kernel can confine it (otherwise the call says so and javascript remains). " +
			"Use it for arithmetic over data, CSV/JSON/Excel processing, charts and checks; write files for the " +
			"person with lucy_write_file or the generate tools.",
		Human: "running a script",
		Long:  true,
	},
	Required: []string{"code"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("code", "The program, in the language chosen.", 1, MaxScriptChars),
			tools.EnumProp("language", "javascript (the default): the sandboxed interpreter with the `files` object. "+
				"python: Python 3 with pandas, numpy, matplotlib (Agg: save charts with savefig) and openpyxl. "+
				"bash: a shell with coreutils. Python and bash run in the workspace folder (open files by their "+
				"relative path; new files you create there are kept and shared, changes to existing ones are not), "+
				"with no network, about 30 s and 2 GB; where this server's kernel cannot confine them, the call says so.",
				sandbox.JavaScript, sandbox.Python, sandbox.Bash),
		}
	},
}, (*Sandbox).runScript)

type runScriptArgs struct {
	Code     string `json:"code"`
	Language string `json:"language"`
}

func (s *Sandbox) runScript(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args runScriptArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	cmd := s.cmd
	if cmd.Path == "" {
		self, err := sandbox.Self()
		if err != nil {
			return tools.Output{}, err
		}
		cmd = self
	}
	st, err := s.ws.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	limits := s.limits
	if limits.Wall <= 0 {
		limits = sandbox.DefaultLimits
	}
	limits.MaxFileBytes = tools.MaxFileBytes
	if args.Language == sandbox.Python || args.Language == sandbox.Bash {
		if err := nativeAvailable(args.Language); err != nil {
			// The person's request is not wrong, this server cannot do it: say so, change nothing.
			return tools.Output{Content: err.Error() + ". Use language javascript instead.", IsError: true}, nil
		}
		native := s.native
		native.MaxFileBytes = limits.MaxFileBytes
		res, err := s.runNative(ctx, st, cmd, inv.Team, args.Language, args.Code, native)
		if err != nil {
			if errors.Is(err, sandbox.ErrSandbox) {
				return tools.Output{}, &tools.TransientError{Tool: tools.RunScript, Err: err}
			}
			return tools.Output{}, err
		}
		return scriptOutput(res), nil
	}
	var res sandbox.Result
	if local, ok := st.(workspace.Dirs); ok {
		// The script works on the team's folder itself. It only creates files (the sandbox refuses
		// to replace one it did not write), and it holds the workspace's write lock, so that a
		// tool's write cannot slip between its check and its write.
		var dir string
		if dir, err = local.Dir(inv.Team); err != nil {
			return tools.Output{}, err
		}
		unlock := local.Lock(inv.Team)
		res, err = sandbox.Run(ctx, cmd, sandbox.Request{Code: args.Code, Dir: dir, Limits: limits})
		unlock()
	} else {
		res, err = s.runStaged(ctx, st, cmd, inv.Team, args.Code, limits)
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrSandbox) {
			return tools.Output{}, &tools.TransientError{Tool: tools.RunScript, Err: err}
		}
		return tools.Output{}, err
	}
	return scriptOutput(res), nil
}

// maxStagedBytes bounds the workspace a script on a shared store is given: it is copied to this
// machine for each script.
const maxStagedBytes = 64 << 20

// runStaged runs a script on a copy of the team's workspace in a temporary folder, for a store that
// is not a folder of this machine (S3), and saves the files the script created. They are saved
// create-only: a file that another run created under the same name meanwhile is kept, and the
// script's result says which of its files were not saved.
func (s *Sandbox) runStaged(ctx context.Context, st workspace.Store, cmd sandbox.Command, team, code string, limits sandbox.Limits) (sandbox.Result, error) {
	dir, err := os.MkdirTemp("", "lucy-script-")
	if err != nil {
		return sandbox.Result{}, err
	}
	defer os.RemoveAll(dir)
	if _, err := workspace.Stage(ctx, st, team, dir, maxStagedBytes); err != nil {
		return sandbox.Result{}, fmt.Errorf("%s: copy the workspace for the script: %w", tools.RunScript, err)
	}
	res, err := sandbox.Run(ctx, cmd, sandbox.Request{Code: code, Dir: dir, Limits: limits})
	if err != nil {
		return res, err
	}
	saved, notes, err := saveNew(ctx, st, team, dir, res.Written)
	if err != nil {
		return res, err
	}
	res.Written = saved
	if len(notes) > 0 {
		res.Error = strings.TrimSpace(res.Error + " " + strings.Join(notes, " "))
	}
	return res, nil
}

// saveNew saves the files a script created in dir (paths relative to it) into the team's workspace,
// create-only, for every language alike: a file another run created meanwhile under the same name is
// kept, and a name the workspace refuses (a backslash, say) is the script's doing; both are said in
// the notes the script's result carries, and the rest is saved. Any other failure is the store's and
// is returned, so that the tool call is retried rather than reported as done without its files.
func saveNew(ctx context.Context, st workspace.Store, team, dir string, created []string) (saved, notes []string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	var lost []string
	for _, rel := range created {
		data, err := root.ReadFile(rel)
		if err == nil {
			_, err = st.Write(ctx, team, rel, data, workspace.Cond{IfNoneMatch: true})
		}
		switch {
		case errors.Is(err, workspace.ErrPrecondition):
			lost = append(lost, rel)
		case errors.Is(err, workspace.ErrInvalidPath):
			notes = append(notes, fmt.Sprintf("%s was not saved: %v.", rel, err))
		case err != nil:
			return nil, nil, fmt.Errorf("%s: save %s: %w", tools.RunScript, rel, err)
		default:
			saved = append(saved, rel)
		}
	}
	if len(lost) > 0 {
		notes = append(notes, "These files were not saved: another run created files with the same names while the script ran: "+
			strings.Join(lost, ", ")+".")
	}
	return saved, notes, nil
}

// scriptShownChars is how much of a script's console output the model reads; the notes come first so
// that the result's own cap (MaxOutputChars) never cuts them.
const scriptShownChars = 12_000

// scriptOutput is what the model reads: the error and notes first, then the output.
func scriptOutput(res sandbox.Result) tools.Output {
	var b strings.Builder
	if res.Error != "" {
		b.WriteString("Error: " + res.Error + "\n")
	}
	if res.Value != "" {
		b.WriteString("Value: " + res.Value + "\n")
	}
	if len(res.Written) > 0 {
		b.WriteString("Files written: " + strings.Join(res.Written, ", ") + "\n")
	}
	shown := res.Output
	dropped := res.Dropped
	if len(shown) > scriptShownChars {
		cut := scriptShownChars
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		dropped += int64(len(shown) - cut)
		shown = shown[:cut]
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "[Only the first %d bytes of output are shown; %d more were dropped: print less, or write a file.]\n",
			len(shown), dropped)
	}
	if shown != "" {
		b.WriteString("Output:\n" + shown)
	} else {
		b.WriteString("Output: (nothing printed)")
	}
	return tools.Output{Content: strings.TrimRight(b.String(), "\n"), IsError: res.Error != "", Artifacts: res.Written}
}
