package activities

// Temporal refuses a payload over 2 MiB (its default blob size limit): an activity whose result is larger cannot
// complete, and every retry would redo the work for the same refusal. Results whose size depends
// on someone else — the model's reply, a Slack thread — are therefore measured or capped before
// they are returned. Tool results are capped by ToolResultMaxChars, thread messages in slack.go.

import (
	"fmt"
	"unicode/utf8"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// replyBudget is the largest encoded ModelReply CallModel returns: 1.5 MiB, which leaves a quarter
// of the 2 MiB limit for the completion event's other fields and for a codec's envelope.
const replyBudget = 3 << 19

// encodedSize is the size of v as Temporal stores it: encoded by dc, codecs included.
func encodedSize(dc converter.DataConverter, v any) (int, error) {
	p, err := dc.ToPayloads(v)
	if err != nil {
		// The SDK would fail to encode the result with the same converter: not worth retrying.
		return 0, temporal.NewNonRetryableApplicationError("encode result: "+err.Error(), ErrConfig, nil)
	}
	return proto.Size(p), nil
}

// fitReply shrinks r until it fits replyBudget once encoded with the Activities' data converter
// (a compressing codec lets more through). Piece by piece, the largest first: a tool call's
// arguments are replaced by "{}" with Oversize set to their size (the workflow then tells the
// model to send less at once, rather than running the call with arguments it never got); the
// content is cut at the end, as little as needed, with a note. A reply that fits is returned
// unchanged.
func (a *Activities) fitReply(r *ModelReply) error {
	dc := a.dataConverter()
	full := r.Content
	keep := len(full) // bytes of full the content keeps
	fits := func() (bool, int, error) {
		size, err := encodedSize(dc, *r)
		return size <= replyBudget, size, err
	}
	tooLarge := func(size int) error {
		return temporal.NewApplicationError(fmt.Sprintf(
			"the model's reply takes %d bytes even without tool arguments and content, over the %d-byte budget", size, replyBudget),
			ErrModelReplyTooLarge)
	}
	for {
		ok, size, err := fits()
		if err != nil || ok {
			return err
		}
		i := largestArguments(r.ToolCalls)
		if i < 0 && keep == 0 {
			return tooLarge(size)
		}
		if i < 0 || len(r.ToolCalls[i].Arguments) < keep {
			// The content is the largest piece. Search the longest start of it that fits: how
			// many encoded bytes a byte of content costs varies (JSON escapes <, > and & in 6
			// bytes; a codec may compress), so no single estimate cuts just enough. About 15
			// encodings, on a rare path.
			r.Content = cutText(full, 0, replyCutWhy)
			ok, _, err := fits()
			if err != nil {
				return err
			}
			if ok {
				lo, hi := 0, keep // lo fits, hi does not
				for hi-lo > 256 {
					mid := lo + (hi-lo)/2
					r.Content = cutText(full, mid, replyCutWhy)
					ok, _, err := fits()
					if err != nil {
						return err
					}
					if ok {
						lo = mid
					} else {
						hi = mid
					}
				}
				keep = lo
				r.Content = cutText(full, keep, replyCutWhy)
				a.Log.Warn().Int("bytes", len(full)).Int("kept", keep).Int("replyBytes", size).
					Msg("model reply content too large for workflow history; cut")
				continue
			}
			// Even without its content the reply is too large: the arguments must go first, and
			// the content may then stay.
			r.Content = cutText(full, keep, replyCutWhy)
			if i < 0 {
				return tooLarge(size)
			}
		}
		c := &r.ToolCalls[i]
		a.Log.Warn().Str("tool", c.Name).Str("call", c.ID).Int("bytes", len(c.Arguments)).Int("replyBytes", size).
			Msg("tool call arguments too large for workflow history; dropped")
		c.Oversize, c.Arguments = len(c.Arguments), "{}"
	}
}

// replyCutWhy ends the note on a cut reply content.
const replyCutWhy = "the reply was too long to keep"

// largestArguments returns the index of the tool call with the largest arguments that are worth
// dropping, -1 if none is.
func largestArguments(calls []ToolCall) int {
	best := -1
	for i, c := range calls {
		if c.Oversize > 0 || len(c.Arguments) <= len("{}") {
			continue
		}
		if best < 0 || len(c.Arguments) > len(calls[best].Arguments) {
			best = i
		}
	}
	return best
}

// cutText keeps the first keep bytes of s (backing off to a rune boundary) and says how many
// characters were cut, and why when why is set: "[… 120 characters cut: why]".
func cutText(s string, keep int, why string) string {
	if keep >= len(s) {
		return s
	}
	keep = max(keep, 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	note := fmt.Sprintf("[… %d characters cut", utf8.RuneCountInString(s[keep:]))
	if why != "" {
		note += ": " + why
	}
	note += "]"
	if keep == 0 {
		return note
	}
	return s[:keep] + "\n" + note
}
