package agent

// Stage is a rung of the recovery ladder.
type Stage int

// Recovery stages.
const (
	StageNone Stage = iota // under the threshold, or no recoveries left
	StageR1                // auto-compact: PlanCompaction(msgs, CompactionKeepTail)
	StageR2                // deep prune: PlanCompaction(msgs, DeepPruneKeepTail), a "[deep pruned]" summary (workflows/transcript.go)
	StageR3                // ask the human: force ToolAskHuman with AskHumanContext
)

// AskHumanContext is R3's question.
const AskHumanContext = "I've made progress but I'm losing context faster than I can recover. Keep going, change direction, or stop?"

func (s Stage) String() string {
	switch s {
	case StageR1:
		return "R1"
	case StageR2:
		return "R2"
	case StageR3:
		return "R3"
	default:
		return "none"
	}
}

// KeepTail is how many messages the stage keeps verbatim (0 for stages that do not compact).
func (s Stage) KeepTail() int {
	switch s {
	case StageR1:
		return CompactionKeepTail
	case StageR2:
		return DeepPruneKeepTail
	default:
		return 0
	}
}

// Recovery is the recovery ladder's state for one run (its counters). Its zero value is
// ready.
type Recovery struct {
	// Used counts recoveries fired in this run, R1, R2 and R3 alike; at MaxRecoveries the ladder stops.
	Used int `json:"used"`
	// LastR1, LastR2, LastR3 are the turns of the latest firing of each stage.
	LastR1 int `json:"lastR1"`
	LastR2 int `json:"lastR2"`
	LastR3 int `json:"lastR3"`
	// Last is the latest stage fired.
	Last Stage `json:"last"`
}

// Next decides, at a turn, whether the conversation's token estimate needs a recovery and which one,
// and records it. Over the threshold (OverThreshold: more than CompactionRatio of window):
//
//   - R2 if the latest stage was R1, fired within RecoveryWindow turns;
//   - R3 if the latest stage was R2, fired within RecoveryWindow turns;
//   - R1 otherwise: the first time, after a stage whose window has passed, and after R3 (the human has
//     answered, the context is still large: compacting is the next right thing, and the MaxRecoveries cap
//     keeps this from cycling);
//
// and StageNone once MaxRecoveries have been used.
func (r *Recovery) Next(turn int, tokens int, window int) Stage {
	if !OverThreshold(tokens, window) || r.Used >= MaxRecoveries {
		return StageNone
	}
	stage := StageR1
	switch {
	case r.Last == StageR1 && turn-r.LastR1 <= RecoveryWindow:
		stage = StageR2
	case r.Last == StageR2 && turn-r.LastR2 <= RecoveryWindow:
		stage = StageR3
	}
	r.Used++
	r.Last = stage
	switch stage {
	case StageR1:
		r.LastR1 = turn
	case StageR2:
		r.LastR2 = turn
	case StageR3:
		r.LastR3 = turn
	}
	return stage
}
