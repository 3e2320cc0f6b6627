package activities

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// zlibConverter is a client's data converter with a codec, as with encryption or compression.
func zlibConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}))
}

// randomText is n bytes no codec can compress.
func randomText(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

func writeArgs(content string) string {
	return fmt.Sprintf(`{"path":"big.txt","content":%q}`, content)
}

func replySize(t *testing.T, dc converter.DataConverter, r ModelReply) int {
	t.Helper()
	n, err := encodedSize(dc, r)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A reply whose tool arguments would take it over Temporal's payload limit loses the largest
// arguments, and only as many as needed; the workflow learns their size from Oversize.
func TestCallModelDropsOversizeArguments(t *testing.T) {
	big, mid := writeArgs(randomText(1<<20)), writeArgs(randomText(900<<10))
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "Writing both files.", ToolCalls: []fakellm.ToolCall{
			fakellm.Call("c1", "lucy_write_file", mid), fakellm.Call("c2", "lucy_write_file", big), fakellm.Call("c3", "lucy_list_files", `{}`),
		}}
	})
	a := llmActivities(t, srv, fakeHistory{})
	out, err := callModel(t, a, CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "write them"}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "c1", Name: "lucy_write_file", Arguments: mid},
		{ID: "c2", Name: "lucy_write_file", Arguments: "{}", Oversize: len(big)},
		{ID: "c3", Name: "lucy_list_files", Arguments: "{}"},
	}
	if len(out.ToolCalls) != len(want) {
		t.Fatalf("%d tool calls, want %d", len(out.ToolCalls), len(want))
	}
	for i, w := range want {
		if g := out.ToolCalls[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("call %d: id %s args %d bytes oversize %d, want id %s args %d bytes oversize %d", i, g.ID, len(g.Arguments), g.Oversize, w.ID, len(w.Arguments), w.Oversize)
		}
	}
	if out.Content != "Writing both files." {
		t.Errorf("content %q", out.Content)
	}
	if n := replySize(t, a.dataConverter(), out); n > replyBudget {
		t.Errorf("reply is %d bytes encoded, over the %d budget", n, replyBudget)
	}
}

// An over-long content is cut at the end, as little as needed, with a note on how much was cut.
func TestCallModelCutsOversizeContent(t *testing.T) {
	// "<" and "&" take 6 bytes each in JSON, "é" two: raw length says little about encoded size.
	unit := "a<b & é. "
	long := strings.Repeat(unit, (3<<20)/len(unit))
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: long} })
	a := llmActivities(t, srv, fakeHistory{})
	out, err := callModel(t, a, CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "write a lot"}}}})
	if err != nil {
		t.Fatal(err)
	}
	n := replySize(t, a.dataConverter(), out)
	if n > replyBudget || n < replyBudget-4096 {
		t.Errorf("reply is %d bytes encoded, want just under the %d budget", n, replyBudget)
	}
	i := strings.LastIndex(out.Content, "\n[… ")
	if i < 0 || !strings.HasPrefix(long, out.Content[:i]) {
		t.Fatalf("content does not keep the start of the reply and end in a note: …%q", out.Content[max(0, len(out.Content)-80):])
	}
	var cut int
	if _, err := fmt.Sscanf(out.Content[i:], "\n[… %d characters cut: the reply was too long to keep]", &cut); err != nil {
		t.Fatalf("note %q: %v", out.Content[i:], err)
	}
	if kept := []rune(out.Content[:i]); cut != len([]rune(long))-len(kept) {
		t.Errorf("note says %d characters cut, %d were", cut, len([]rune(long))-len(kept))
	}
}

// The size is measured with the Activities' data converter: what a compressing codec stores in
// a few kilobytes is kept whole, what it cannot compress is not.
func TestCallModelMeasuresWithItsDataConverter(t *testing.T) {
	compressible, random := writeArgs(strings.Repeat("all work and no play ", (3<<20)/21)), writeArgs(randomText(3<<20))
	srv := fakellm.New(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_write_file", compressible), fakellm.Call("c2", "lucy_write_file", random)}}
	})
	for _, tc := range []struct {
		name         string
		dc           converter.DataConverter
		keepFirst    bool
		wantOversize int
	}{
		{"default converter", nil, false, len(compressible)},
		{"zlib codec", zlibConverter(), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := llmActivities(t, srv, fakeHistory{})
			a.DataConverter = tc.dc
			out, err := callModel(t, a, CallModelInput{Tier: "default", Transcript: Transcript{Entries: []Entry{{Role: "user", Text: "go"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if c := out.ToolCalls[0]; (c.Arguments == compressible) != tc.keepFirst || c.Oversize != tc.wantOversize {
				t.Errorf("compressible call: %d bytes, oversize %d; want kept %v, oversize %d", len(c.Arguments), c.Oversize, tc.keepFirst, tc.wantOversize)
			}
			if c := out.ToolCalls[1]; c.Arguments != "{}" || c.Oversize != len(random) {
				t.Errorf("random call: %d bytes, oversize %d; want dropped, oversize %d", len(c.Arguments), c.Oversize, len(random))
			}
			if n := replySize(t, a.dataConverter(), out); n > replyBudget {
				t.Errorf("reply is %d bytes encoded, over the %d budget", n, replyBudget)
			}
		})
	}
}

// Content and arguments together: the largest piece goes first, as little as needed.
func TestFitReplyLargestFirst(t *testing.T) {
	a := &Activities{Log: zerolog.Nop()}
	for _, tc := range []struct {
		name                   string
		content, args          int // bytes
		wholeContent, wholeArg bool
	}{
		// The arguments are the larger: they go, the content stays.
		{"arguments larger", 1200 << 10, 1300 << 10, true, false},
		// The content is the larger and cutting it is enough: the tool call keeps its arguments.
		{"content larger", 1400 << 10, 1300 << 10, false, true},
		// Cutting the content would not be enough: the arguments go, then the content is cut.
		{"both too large", 1600 << 10, 1550 << 10, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content, args := randomText(tc.content), writeArgs(randomText(tc.args))
			r := ModelReply{Content: content, ToolCalls: []ToolCall{{ID: "c1", Name: "lucy_write_file", Arguments: args}}}
			if err := a.fitReply(&r); err != nil {
				t.Fatal(err)
			}
			if n := replySize(t, a.dataConverter(), r); n > replyBudget || (!tc.wholeContent && n < replyBudget-4096) {
				t.Errorf("reply is %d bytes encoded, want at most %d and, with a cut content, just under", n, replyBudget)
			}
			if got := r.Content == content; got != tc.wholeContent {
				t.Errorf("content whole = %v (%d of %d bytes), want %v", got, len(r.Content), len(content), tc.wholeContent)
			}
			c := r.ToolCalls[0]
			if got := c.Arguments == args && c.Oversize == 0; got != tc.wholeArg {
				t.Errorf("arguments whole = %v, want %v", got, tc.wholeArg)
			}
			if !tc.wholeArg && (c.Arguments != "{}" || c.Oversize != len(args)) {
				t.Errorf("dropped arguments %q, oversize %d, want {} and %d", c.Arguments, c.Oversize, len(args))
			}
		})
	}

	small := ModelReply{Content: "fine", ToolCalls: []ToolCall{{ID: "c1", Name: "lucy_list_files", Arguments: "{}"}}}
	before := small
	if err := a.fitReply(&small); err != nil || small.Content != before.Content || !reflect.DeepEqual(small.ToolCalls[0], before.ToolCalls[0]) {
		t.Errorf("a reply that fits changed: %+v %v", small, err)
	}
}

// A reply too large even without arguments and content (a model gone wild with tool names) is a
// retryable ModelReplyTooLarge error, not a payload Temporal would refuse.
func TestFitReplyTooLarge(t *testing.T) {
	a := &Activities{Log: zerolog.Nop()}
	r := ModelReply{Content: "x", ToolCalls: []ToolCall{{ID: "c1", Name: randomText(2 << 20), Arguments: `{"a":1}`}}}
	err := a.fitReply(&r)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrModelReplyTooLarge || appErr.NonRetryable() {
		t.Fatalf("err %v, want a retryable %s", err, ErrModelReplyTooLarge)
	}
	if ModelFailureKind(err) != ModelFailureInternal {
		t.Errorf("kind %q", ModelFailureKind(err))
	}
}

func TestCutText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		keep int
		why  string
		want string
	}{
		{"hello", 10, "", "hello"},
		{"hello", 5, "", "hello"},
		{"hello world", 5, "", "hello\n[… 6 characters cut]"},
		{"héllo", 2, "why", "h\n[… 4 characters cut: why]"}, // not inside the é
		{"hello", 0, "", "[… 5 characters cut]"},
	} {
		if got := cutText(tc.s, tc.keep, tc.why); got != tc.want {
			t.Errorf("cutText(%q, %d) = %q, want %q", tc.s, tc.keep, got, tc.want)
		}
	}
}
