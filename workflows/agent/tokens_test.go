package agent

import (
	"strings"
	"testing"
)

func TestEstimateTokens(t *testing.T) {
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog while the team reviews the quarterly numbers. ", 40)
	json := strings.Repeat(`{"id": 12345, "name": "Acme Corp", "tags": ["a", "b"], "active": true}, `, 40)
	tests := []struct {
		name     string
		text     string
		min, max int
	}{
		{"empty", "", 0, 0},
		{"one word", "hello", 1, 2},
		// cl100k: about 4 characters per token for English prose.
		{"prose", prose, len(prose) / 5, len(prose) / 3},
		// JSON is denser: about 2–3 characters per token.
		{"json", json, len(json) / 4, len(json) / 2},
		// CJK: about one token per character.
		{"cjk", strings.Repeat("日本語のテキスト", 10), 70, 90},
		{"indentation is cheap", "x" + strings.Repeat(" ", 400) + "y", 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateTokens(tt.text); got < tt.min || got > tt.max {
				t.Errorf("EstimateTokens(%d chars) = %d, want %d..%d", len(tt.text), got, tt.min, tt.max)
			}
		})
	}
	if p, j := EstimateTokens(prose)*1000/len(prose), EstimateTokens(json)*1000/len(json); j <= p {
		t.Errorf("JSON tokens per char (%d‰) should exceed prose (%d‰)", j, p)
	}
	if first, again := EstimateTokens(prose), EstimateTokens(prose); first != again {
		t.Error("not deterministic")
	}
}

// TestEstimateTokensExact: the estimate of each text, to the token. Compaction in recorded runs
// was decided on these figures, so a change of the estimate is a change of workflow behaviour.
func TestEstimateTokensExact(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 2},
		{strings.Repeat("The quick brown fox jumps over the lazy dog while the team reviews the quarterly numbers. ", 40), 917},
		{strings.Repeat(`{"id": 12345, "name": "Acme Corp", "tags": ["a", "b"], "active": true}, `, 40), 1170},
		{strings.Repeat("日本語のテキスト", 10), 80},
		{"x" + strings.Repeat(" ", 400) + "y", 1},
		{"café déjà vu 🎉 ok", 8},
		{"bad \xff\xfe utf8 \xe6\x97 cut", 8}, // invalid bytes and a cut sequence: one other character each
		{"tabs\t\t\nand\r\nlines  ", 4},
		{" leading", 2},
		{"trailing ", 3},
		{"a_b-c.d/e:f", 5},
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.text); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	text := strings.Repeat(`The quick brown fox {"id": 12345, "name": "Acme Corp"} jumps, café 🎉. `, 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		EstimateTokens(text)
	}
}

func TestContextWindow(t *testing.T) {
	tests := []struct {
		model string
		want  int
	}{
		{"gpt-4.1", 1047576},
		{"gpt-4.1-mini", 1047576},
		{"openai/gpt-4.1-nano", 1047576},
		{"gpt-4o", 128000},
		{"gpt-4o-mini", 128000},
		{"o3", 200000},
		{"o3-mini", 200000},
		{"openai/o4-mini", 200000},
		{"google/gemini-2.5-flash", 1048576},
		{"google/gemini-3.1-pro-preview", 1048576},
		{"google/gemini-3-flash-preview", 1048576},
		{"anthropic/claude-sonnet-4.5", 200000},
		{"claude-3-5-haiku", 200000},
		{"minimax/minimax-m2.5", 196608},
		{"MiniMax-M2.5", 196608},
		{"meta-llama/llama-3.3-70b-instruct", 128000},
		{"llama3.1:8b", 128000},
		{"qwen2.5-coder", DefaultContextWindow},
		{"", DefaultContextWindow},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			if got := ContextWindow(tt.model); got != tt.want {
				t.Errorf("ContextWindow(%q) = %d, want %d", tt.model, got, tt.want)
			}
		})
	}
}

func TestOverThreshold(t *testing.T) {
	tests := []struct {
		tokens, window int
		want           bool
	}{
		{70000, 100000, false}, {70001, 100000, true}, {0, 100000, false},
		{89600, 0, false}, {89601, 0, true}, // default window 128000
	}
	for _, tt := range tests {
		if got := OverThreshold(tt.tokens, tt.window); got != tt.want {
			t.Errorf("OverThreshold(%d, %d) = %v, want %v", tt.tokens, tt.window, got, tt.want)
		}
	}
}

func TestPayloadCap(t *testing.T) {
	for window, want := range map[int]int{128_000: 460_800, 1_000_000: 3_600_000, 8_000: MaxPayloadChars, 32_000: MaxPayloadChars} {
		if got := PayloadCap(window); got != want {
			t.Errorf("PayloadCap(%d) = %d, want %d", window, got, want)
		}
		if window >= 32_000 && float64(PayloadCap(window)) < float64(window)*CompactionRatio*CharsPerTokenEstimate {
			t.Errorf("PayloadCap(%d) is below the compaction trigger: trimming would fire first", window)
		}
	}
}
