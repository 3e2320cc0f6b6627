package gateway

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// metrics are the gateway's counters in the Prometheus text format, written by hand: two series do
// not justify a client library and its dependency tree.
type metrics struct {
	mu           sync.Mutex
	events       map[eventLabels]uint64
	handoffSum   float64 // seconds
	handoffCount uint64
}

type eventLabels struct{ typ, outcome string }

func newMetrics() *metrics { return &metrics{events: map[eventLabels]uint64{}} }

func (m *metrics) event(typ, outcome string) {
	m.mu.Lock()
	m.events[eventLabels{typ, outcome}]++
	m.mu.Unlock()
}

func (m *metrics) handoff(d time.Duration) {
	m.mu.Lock()
	m.handoffSum += d.Seconds()
	m.handoffCount++
	m.mu.Unlock()
}

func (m *metrics) write(w io.Writer) error {
	m.mu.Lock()
	keys := make([]eventLabels, 0, len(m.events))
	for k := range m.events {
		keys = append(keys, k)
	}
	counts := make([]uint64, len(keys))
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].outcome < keys[j].outcome
	})
	for i, k := range keys {
		counts[i] = m.events[k]
	}
	sum, count := m.handoffSum, m.handoffCount
	m.mu.Unlock()

	var b strings.Builder
	b.WriteString("# HELP lucy_gateway_events_total Slack events and interactions received, by type and outcome.\n")
	b.WriteString("# TYPE lucy_gateway_events_total counter\n")
	for i, k := range keys {
		fmt.Fprintf(&b, "lucy_gateway_events_total{type=%s,outcome=%s} %d\n", labelValue(k.typ), labelValue(k.outcome), counts[i])
	}
	b.WriteString("# HELP lucy_gateway_handoff_seconds Time to hand an event durably to Temporal.\n")
	b.WriteString("# TYPE lucy_gateway_handoff_seconds summary\n")
	fmt.Fprintf(&b, "lucy_gateway_handoff_seconds_sum %s\n", strconv.FormatFloat(sum, 'g', -1, 64))
	fmt.Fprintf(&b, "lucy_gateway_handoff_seconds_count %d\n", count)
	_, err := io.WriteString(w, b.String())
	return err
}

// labelValue quotes a label value as the text format wants it (backslash, quote and newline escaped).
func labelValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
