package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Call is one tool call the model made.
type Call struct {
	Name string `json:"name"`
	// Args is the raw JSON arguments string; it is normalized before calls are compared.
	Args string `json:"args"`
	// Batch numbers the model reply the call came in (PerBatch detectors only).
	Batch int `json:"batch,omitempty"`
}

// NormalizeArgs returns a canonical form of a JSON arguments string: object keys sorted (encoding/json
// sorts map keys), insignificant white space removed, numbers kept as written. Empty arguments and
// "null" equal "{}". A string that is not JSON is compared by its trimmed text.
func NormalizeArgs(args string) string {
	s := strings.TrimSpace(args)
	if s == "" || s == "null" {
		return "{}"
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return s
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// Loop detection kinds.
const (
	LoopIdentical = "identical" // same name and arguments ≥ IdenticalThreshold times in the window
	LoopPattern   = "pattern"   // same name ≥ PatternThreshold times in the window, arguments differing
)

// LoopDetector is tool-loop detection: two detectors over the last LoopWindow calls, and an
// escalation ladder across firings. Its zero value is ready; it is plain data so it can live in
// workflow state.
//
// The ladder is one ladder for both detectors and the whole run: thrash is thrash, whichever detector
// sees it, and a model that needed a nudge once is likelier to need a directive next. The level never
// goes down within one run; a new request is a new run and starts at zero.
type LoopDetector struct {
	// Recent holds the last LoopWindow calls, oldest first, with normalized arguments.
	Recent []Call `json:"recent,omitempty"`
	// Level is the ladder level of the latest firing: 0 never fired, 1 nudge, 2 directive, 3 ask_human.
	Level int `json:"level"`
	// Firings counts every firing, for telemetry (agent.loop.detected).
	Firings int `json:"firings"`
	// PerBatch makes the detectors count steps, not calls: calls made in parallel in one reply (four
	// page fetches at once) are one step, the window holds the last LoopWindow replies, and the run
	// journal's tools, which the system prompt asks the model to use often, are not counted. Runs
	// recorded before it counted every call (workflows/versions.go).
	PerBatch bool `json:"perBatch,omitempty"`
	// Batches counts the replies observed (PerBatch).
	Batches int `json:"batches,omitempty"`
}

// Detection is the result of LoopDetector.Observe.
type Detection struct {
	Fired bool   `json:"fired"`
	Kind  string `json:"kind,omitempty"` // LoopIdentical or LoopPattern
	Tool  string `json:"tool,omitempty"`
	// Count is how many times the tool appeared in the window.
	Count int `json:"count,omitempty"`
	Level int `json:"level,omitempty"`
	// Message is the text to inject into the conversation before the next model call.
	Message string `json:"message,omitempty"`
	// ForceTool, when set, is the tool the next model call must call (tool_choice).
	ForceTool string `json:"forceTool,omitempty"`
}

// Observe records one tool batch, in call order, and runs both detectors. Identical thrash is checked
// first because it is the stronger signal. After a firing the window is cleared, so that one repetition
// does not fire again on every following turn: the next firing needs fresh evidence.
func (d *LoopDetector) Observe(batch []Call) Detection {
	if d.PerBatch {
		d.Batches++
		for _, c := range batch {
			if !IsJournalTool(c.Name) {
				d.Recent = append(d.Recent, Call{Name: c.Name, Args: NormalizeArgs(c.Args), Batch: d.Batches})
			}
		}
		first := 0
		for first < len(d.Recent) && d.Recent[first].Batch <= d.Batches-LoopWindow {
			first++
		}
		d.Recent = append([]Call(nil), d.Recent[first:]...)
	} else {
		for _, c := range batch {
			d.Recent = append(d.Recent, Call{Name: c.Name, Args: NormalizeArgs(c.Args)})
		}
		if over := len(d.Recent) - LoopWindow; over > 0 {
			d.Recent = append([]Call(nil), d.Recent[over:]...)
		}
	}

	det, ok := d.identical()
	if !ok {
		det, ok = d.pattern()
	}
	if !ok {
		return Detection{}
	}
	d.Level = min(d.Level+1, MaxLoopLevel)
	d.Firings++
	d.Recent = nil
	det.Fired = true
	det.Level = d.Level
	det.Message, det.ForceTool = loopMessage(det.Kind, det.Tool, det.Count, d.Level)
	return det
}

// occurrences counts the calls that match, or in PerBatch mode the replies they came in.
func (d *LoopDetector) occurrences(match func(Call) bool) int {
	n, last := 0, -1
	for _, c := range d.Recent {
		if !match(c) {
			continue
		}
		if d.PerBatch && c.Batch == last {
			continue
		}
		n, last = n+1, c.Batch
	}
	return n
}

// identical finds a (name, args) pair repeated IdenticalThreshold times, preferring the most recent call.
func (d *LoopDetector) identical() (Detection, bool) {
	for i := len(d.Recent) - 1; i >= 0; i-- {
		cur := d.Recent[i]
		n := d.occurrences(func(c Call) bool { return c.Name == cur.Name && c.Args == cur.Args })
		if n >= IdenticalThreshold {
			return Detection{Kind: LoopIdentical, Tool: d.Recent[i].Name, Count: n}, true
		}
	}
	return Detection{}, false
}

// pattern finds a name repeated PatternThreshold times with at least two different arguments.
func (d *LoopDetector) pattern() (Detection, bool) {
	for i := len(d.Recent) - 1; i >= 0; i-- {
		name := d.Recent[i].Name
		differ := false
		for _, c := range d.Recent {
			if c.Name == name && c.Args != d.Recent[i].Args {
				differ = true
			}
		}
		n := d.occurrences(func(c Call) bool { return c.Name == name })
		if n >= PatternThreshold && differ {
			return Detection{Kind: LoopPattern, Tool: name, Count: n}, true
		}
	}
	return Detection{}, false
}

// loopMessage is the ladder's text. L2 could force a knowledge search; Lucy has no such tool, so
// L2 forces nothing and says more firmly what to do instead. L3 forces ask_human.
func loopMessage(kind, tool string, count, level int) (msg, force string) {
	var what string
	if kind == LoopIdentical {
		what = fmt.Sprintf("You have called %s with the same arguments %d times in your last %d tool calls, and it keeps giving you the same result.", tool, count, LoopWindow)
	} else {
		what = fmt.Sprintf("You have called %s %d times in your last %d tool calls with small variations, and it is not getting you closer.", tool, count, LoopWindow)
	}
	switch level {
	case 1:
		return what + " Try a different approach or a different tool.", ""
	case 2:
		return what + " STOP calling " + tool + ". Your next step must be different: use another tool, " +
			"change the inputs substantially, or write your answer with what you already have and say what is missing.", ""
	default:
		return what + " You are going in circles. Call " + ToolAskHuman + " now: tell the person in one or two " +
			"sentences what you tried and what you found, and ask how they want you to proceed.", ToolAskHuman
	}
}
