package agent

import (
	"strings"
	"testing"
)

func TestNormalizeArgs(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"key order", `{"q":"x","n":1}`, `{"n":1,"q":"x"}`},
		{"white space", "{ \"q\" : \"x\" ,\n \"n\": 1 }", `{"n":1,"q":"x"}`},
		{"nested", `{"a":{"z":1,"y":[1, 2]}}`, `{"a":{"y":[1,2],"z":1}}`},
		{"empty is {}", ``, `{}`},
		{"null is {}", `null`, `{}`},
		{"html kept", `{"q":"a<b"}`, `{"q":"a<b"}`},
		{"not json trimmed", `  not json `, `not json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := NormalizeArgs(tt.a), NormalizeArgs(tt.b); got != want {
				t.Errorf("NormalizeArgs(%q) = %q, want %q", tt.a, got, want)
			}
		})
	}
	if NormalizeArgs(`{"q":"x"}`) == NormalizeArgs(`{"q":"y"}`) {
		t.Error("different values normalized equal")
	}
}

func calls(specs ...string) []Call {
	var out []Call
	for _, s := range specs {
		name, args, _ := strings.Cut(s, " ")
		out = append(out, Call{Name: name, Args: args})
	}
	return out
}

func TestLoopDetectorFiring(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]Call
		want    Detection // Fired, Kind, Tool, Count checked
	}{
		{
			name:    "identical three times fires",
			batches: [][]Call{calls(`search {"q":"a"}`), calls(`search {"q":"a"}`), calls(`search {"q":"a"}`)},
			want:    Detection{Fired: true, Kind: LoopIdentical, Tool: "search", Count: 3},
		},
		{
			name:    "identical twice does not fire",
			batches: [][]Call{calls(`search {"q":"a"}`), calls(`search {"q":"a"}`), calls(`other {}`)},
		},
		{
			name: "identical with reordered keys and spaces fires",
			batches: [][]Call{calls(`get {"a":1,"b":2}`), calls(`get { "b": 2, "a": 1 }`), calls(`x {}`),
				calls(`get {"b":2,"a":1}`)},
			want: Detection{Fired: true, Kind: LoopIdentical, Tool: "get", Count: 3},
		},
		{
			name:    "one parallel batch of three identical calls fires",
			batches: [][]Call{calls(`fetch {"u":1}`, `fetch {"u":1}`, `fetch {"u":1}`)},
			want:    Detection{Fired: true, Kind: LoopIdentical, Tool: "fetch", Count: 3},
		},
		{
			name: "identical spread beyond the window does not fire",
			batches: [][]Call{calls(`s {"q":1}`), calls(`a {}`, `b {}`), calls(`s {"q":1}`), calls(`c {}`, `d {}`, `e {}`),
				calls(`f {}`), calls(`s {"q":1}`)},
		},
		{
			name:    "pattern four variations fires",
			batches: [][]Call{calls(`s {"q":1}`, `s {"q":2}`), calls(`s {"q":3}`), calls(`s {"q":4}`)},
			want:    Detection{Fired: true, Kind: LoopPattern, Tool: "s", Count: 4},
		},
		{
			name:    "pattern three variations does not fire",
			batches: [][]Call{calls(`s {"q":1}`, `s {"q":2}`), calls(`x {}`, `s {"q":3}`)},
		},
		{
			name:    "pattern with two identical pairs fires as pattern",
			batches: [][]Call{calls(`s {"q":1}`), calls(`s {"q":2}`), calls(`s {"q":1}`), calls(`s {"q":2}`)},
			want:    Detection{Fired: true, Kind: LoopPattern, Tool: "s", Count: 4},
		},
		{
			name:    "identical wins over pattern",
			batches: [][]Call{calls(`s {"q":1}`, `s {"q":1}`, `s {"q":2}`, `s {"q":1}`)},
			want:    Detection{Fired: true, Kind: LoopIdentical, Tool: "s", Count: 3},
		},
		{
			name:    "varied tools never fire",
			batches: [][]Call{calls(`a {}`, `b {}`, `c {}`), calls(`d {}`, `e {}`, `f {}`), calls(`a {"x":1}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d LoopDetector
			var got Detection
			for i, b := range tt.batches {
				got = d.Observe(b)
				if got.Fired && i < len(tt.batches)-1 {
					t.Fatalf("fired early at batch %d: %+v", i, got)
				}
			}
			if got.Fired != tt.want.Fired || got.Kind != tt.want.Kind || got.Tool != tt.want.Tool || got.Count != tt.want.Count {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.Fired && (got.Level != 1 || got.Message == "" || got.ForceTool != "") {
				t.Errorf("first firing: level %d, message %q, force %q; want level 1 with a nudge and no forced tool",
					got.Level, got.Message, got.ForceTool)
			}
		})
	}
}

func TestLoopDetectorLadder(t *testing.T) {
	var d LoopDetector
	same := calls(`lucy_web_search {"query":"pricing"}`)
	wantLevels := []struct {
		level int
		force string
		has   string
	}{
		{1, "", "Try a different approach"},
		{2, "", "STOP calling lucy_web_search"},
		{3, ToolAskHuman, "Call ask_human now"},
		{3, ToolAskHuman, "Call ask_human now"}, // stays at the top
	}
	for i, want := range wantLevels {
		var got Detection
		for k := range IdenticalThreshold {
			got = d.Observe(same)
			if k < IdenticalThreshold-1 && got.Fired {
				t.Fatalf("firing %d: fired after %d calls; the window should have been reset", i+1, k+1)
			}
		}
		if !got.Fired || got.Level != want.level || got.ForceTool != want.force || !strings.Contains(got.Message, want.has) {
			t.Errorf("firing %d: got level %d force %q message %q; want level %d force %q containing %q",
				i+1, got.Level, got.ForceTool, got.Message, want.level, want.force, want.has)
		}
	}
	if d.Firings != 4 {
		t.Errorf("Firings = %d, want 4", d.Firings)
	}
}

func TestLoopDetectorResetsWindowAfterFiring(t *testing.T) {
	var d LoopDetector
	for range 3 {
		d.Observe(calls(`s {"q":1}`))
	}
	if len(d.Recent) != 0 {
		t.Fatalf("Recent = %v after a firing, want empty", d.Recent)
	}
	if got := d.Observe(calls(`s {"q":1}`)); got.Fired {
		t.Errorf("one more repetition fired again: %+v", got)
	}
}

func TestLoopDetectorKeepsWindow(t *testing.T) {
	var d LoopDetector
	d.Observe(calls(`a {}`, `b {}`, `c {}`, `d {}`, `e {}`, `f {}`, `g {}`, `h {}`))
	if len(d.Recent) != LoopWindow || d.Recent[0].Name != "c" {
		t.Errorf("Recent = %v, want the last %d calls starting at c", d.Recent, LoopWindow)
	}
}

// PerBatch (issue 8): parallel calls in one reply are one step, the journal's tools do not count,
// and thrash across replies is still caught.
func TestLoopDetectorPerBatch(t *testing.T) {
	fetch := func(url string) Call { return Call{Name: "lucy_web_fetch", Args: `{"url":"` + url + `"}`} }
	fourPages := []Call{fetch("a"), fetch("b"), fetch("c"), fetch("d")}

	var old LoopDetector
	if d := old.Observe(fourPages); !d.Fired {
		t.Fatal("the per-call detector should fire on four parallel fetches (the behaviour PerBatch fixes)")
	}

	d := LoopDetector{PerBatch: true}
	for i := 0; i < 3; i++ { // three replies of four different pages each: research, not thrash
		p := string(rune('a' + i))
		if got := d.Observe([]Call{fetch(p + "1"), fetch(p + "2"), fetch(p + "3"), fetch(p + "4")}); got.Fired {
			t.Fatalf("reply %d: four parallel fetches fired %+v", i+1, got)
		}
	}

	d = LoopDetector{PerBatch: true}
	for i := 0; i < 5; i++ {
		if got := d.Observe([]Call{{Name: "update_run_journal", Args: `{"section":"decisions"}`}, fetch(string(rune('a' + i)))}); got.Fired && i < 3 {
			t.Fatalf("reply %d fired %+v: journal calls must not count", i+1, got)
		}
	}

	d = LoopDetector{PerBatch: true}
	var last Detection
	for i := 0; i < PatternThreshold; i++ {
		last = d.Observe([]Call{fetch(string(rune('a' + i)))})
	}
	if !last.Fired || last.Kind != LoopPattern {
		t.Fatalf("the same tool in %d replies in a row should fire the pattern detector: %+v", PatternThreshold, last)
	}

	d = LoopDetector{PerBatch: true}
	for i := 0; i < IdenticalThreshold; i++ {
		last = d.Observe([]Call{fetch("same")})
	}
	if !last.Fired || last.Kind != LoopIdentical {
		t.Fatalf("the same call in %d replies should fire the identical detector: %+v", IdenticalThreshold, last)
	}
}
