package agent

import (
	"fmt"
	"slices"
	"strings"
)

// ToolCaps is the per-tool-name cap: the CapWarnAt-th call of one tool warns (and escalates the
// model, TriggerLoop), the CapStopAt-th and later stop. Lookups, searches and the workbench are exempt
// (CapExempt). Its zero value is ready.
type ToolCaps struct {
	// Counts is calls per tool name in this run. A map is fine in workflow state: it is never iterated
	// without sorting its keys.
	Counts map[string]int `json:"counts,omitempty"`
}

// CapVerdict is the result of ToolCaps.Observe. Warn and Stop are sorted tool names.
type CapVerdict struct {
	// Warn lists tools that reached CapWarnAt calls in this batch (reported once per tool).
	Warn []string `json:"warn,omitempty"`
	// Stop lists tools at CapStopAt calls or more: the run stops offering them (or the run stops).
	Stop []string `json:"stop,omitempty"`
	// Message is the text to inject for the model, empty when Warn and Stop are.
	Message string `json:"message,omitempty"`
}

// Observe counts one batch of tool names.
func (c *ToolCaps) Observe(names []string) CapVerdict {
	if c.Counts == nil {
		c.Counts = map[string]int{}
	}
	var v CapVerdict
	for _, name := range names {
		if CapExempt(name) {
			continue
		}
		c.Counts[name]++
		switch n := c.Counts[name]; {
		case n >= CapStopAt:
			v.Stop = appendUnique(v.Stop, name)
		case n == CapWarnAt:
			v.Warn = appendUnique(v.Warn, name)
		}
	}
	// A tool that warned and stopped in the same batch only needs the stop.
	v.Warn = slices.DeleteFunc(v.Warn, func(n string) bool { return slices.Contains(v.Stop, n) })
	slices.Sort(v.Warn)
	slices.Sort(v.Stop)

	var parts []string
	for _, name := range v.Warn {
		parts = append(parts, fmt.Sprintf("You have called %s %d times in this request. Before calling it again, "+
			"make sure a new input will give a new result; otherwise work with what you have or try another approach.", name, c.Counts[name]))
	}
	for _, name := range v.Stop {
		parts = append(parts, fmt.Sprintf("%s has reached its limit of %d calls for this request. Do not call it again: "+
			"use the results you already have, or tell the person what is missing.", name, CapStopAt))
	}
	v.Message = strings.Join(parts, "\n")
	return v
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// MaxFetchesPerRequest caps the outbound calls of one request, its sub-agents included: pages
// fetched (lucy_web_fetch) or browsed (lucy_browse), and calls of MCP servers' and OpenAPI
// services' tools (tools.Outbound). No earlier limit existed to copy. Research reads tens of pages
// at most (a research sub-agent has 12 turns), and 60 leaves room for a long one; it also bounds
// what those calls can carry out without approval (a URL, or a browse call's URL and fills, without
// data holds at most a couple of hundred characters, tools.URLCarriesData) to about 12 KB a request,
// where the 50 turns of 10 calls each would otherwise allow 500 calls.
const MaxFetchesPerRequest = 60

// CapExempt reports whether a tool is exempt from the per-tool cap: search tools and the code
// workbench (Lucy's sandbox, lucy_run_script), and the other read-only lookups (list, get, read,
// fetch), because
// calling them many times with different inputs is how research works, and the run-journal tools,
// which the model is asked to call often. Loop detection still catches any of them thrashing.
func CapExempt(name string) bool {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "search"),
		strings.HasPrefix(n, "list_"), strings.HasPrefix(n, "lucy_list"),
		strings.HasPrefix(n, "get_"), strings.HasPrefix(n, "lucy_get_"),
		strings.HasPrefix(n, "read"), strings.HasPrefix(n, "lucy_read"),
		n == ToolRunScript,
		n == "lucy_web_fetch",
		n == ToolGetRunJournal, n == ToolUpdateRunJournal, n == ToolAppendRunJournalEntry:
		return true
	}
	return false
}
