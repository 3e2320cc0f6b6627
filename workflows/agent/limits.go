package agent

import "time"

// The loop's numbers. They are its specification (docs/architecture.md): a change to one changes what
// running workflows replay, so it goes behind workflow.GetVersion with a replay test.
const (
	// MaxToolTurns bounds the LLM ↔ tool iterations of one run.
	MaxToolTurns = 50
	// AbsoluteMax is the catastrophic safety net around a whole run
	// (ABSOLUTE_MAX_SECONDS): whatever happens inside, the run ends with partial results.
	AbsoluteMax = 4 * time.Hour
	// SoftLimit triggers one final "summarize what you've done" turn
	// (15 minutes of work, waits for a person excluded).
	SoftLimit = 15 * time.Minute

	// MaxContextMessages is how much Slack history a run starts with.
	MaxContextMessages = 40
	// ToolResultMaxChars caps one tool result (TOOL_RESULT_MAX_CHARS), so that one
	// page or listing cannot fill the transcript.
	ToolResultMaxChars = 16000
	// ToolResultSummaryThreshold: longer results are summarized by the fast tier, unless
	// the model needs their exact text (NeedsExactText).
	ToolResultSummaryThreshold = 8000
	// MaxPayloadChars: above it, the oldest tool results are dropped from the request, so
	// that a request never grows past what a model accepts.
	MaxPayloadChars = 120000
	// PayloadWindowShare is how much of the model's window (in characters, CharsPerTokenEstimate a
	// token) the transcript may hold before the oldest tool results are dropped; above CompactionRatio,
	// so that compaction fires first.
	PayloadWindowShare = 0.90

	// SupervisorEveryTurns and SupervisorEvery: a checkpoint runs every 3 turns or every 60 s,
	// whichever comes first, never before turn 2 (ShouldCheck).
	SupervisorEveryTurns = 3
	SupervisorEvery      = 60 * time.Second
	// SupervisorFirstTurn is the first turn at which a checkpoint may run.
	SupervisorFirstTurn = 2

	// CompactionRatio: compaction runs when the token estimate crosses 70% of the model's window.
	CompactionRatio = 0.70
	// CompactionKeepTail messages stay verbatim at R1; DeepPruneKeepTail at R2.
	CompactionKeepTail = 10
	DeepPruneKeepTail  = 4
	// RecoveryWindow: R2 (R3) fires when still over the threshold within 20 iterations of R1 (R2).
	RecoveryWindow = 20
	// MaxRecoveries per run; after that the loop runs to its iteration or time limit.
	MaxRecoveries = 4

	// StuckErrorThreshold consecutive tool errors make the run "stuck" (StuckDetector).
	StuckErrorThreshold = 3

	// LoopWindow is how many recent tool calls the loop detectors look at.
	LoopWindow = 6
	// IdenticalThreshold: the same (name, arguments) this many times in the window is identical thrash.
	IdenticalThreshold = 3
	// PatternThreshold: the same name this many times in the window, arguments differing, is pattern thrash.
	PatternThreshold = 4
	// MaxLoopLevel is the top of the loop ladder: nudge, directive, forced ask_human.
	MaxLoopLevel = 3

	// CapWarnAt and CapStopAt: calls of one (non-exempt) tool name per run (ToolCaps).
	CapWarnAt = 4
	CapStopAt = 6

	// EmptyEscalateAfter empty responses in a row escalate to the frontier tier; one more ends the run
	// with partial results: two retries, then a stronger model.
	EmptyEscalateAfter = 2
	// RepeatedEditThreshold failed lucy_edit_file calls escalate to the frontier tier.
	RepeatedEditThreshold = 2

	// ProgressFirstTurn and ProgressEvery: progress posts at turn 3, then every 5 turns.
	ProgressFirstTurn = 3
	ProgressEvery     = 5
	// TaskHintChars of the request name the task in progress messages.
	TaskHintChars = 60

	// DefaultContextWindow is used for models of unknown families.
	DefaultContextWindow = 128000
)

// Tool names the loop itself refers to.
const (
	// ToolAskHuman is the tool the loop ladder and the recovery ladder force at their top rung.
	ToolAskHuman = "ask_human"
	// ToolEditFile is the tool whose repeated failure escalates to the frontier tier.
	ToolEditFile = "lucy_edit_file"
	// ToolWriteFile and ToolRunScript, with ToolEditFile, are the code tools of IsCodeCall.
	ToolWriteFile = "lucy_write_file"
	ToolRunScript = "lucy_run_script"
	// ToolReadFile and ToolWebFetch read in parts; their results are never summarized (NeedsExactText).
	ToolReadFile = "lucy_read_file"
	ToolWebFetch = "lucy_web_fetch"
)
