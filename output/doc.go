// Package output turns the Markdown Lucy posts (the model's answers, and her placeholders, progress,
// questions and notes) into Slack messages. Everything here is a pure function of its input: no I/O,
// no clock, no randomness, so it is safe to call from an activity that may be retried and gives the
// same messages every time, which is what lets the posting activity check for its own earlier post.
//
// # Layers
//
// [RenderMarkdown] runs them in this order; each is exported so callers and tests can use one on its own.
//
//  1. [Sanitize] (Markdown in, Markdown out). The model sees Lucy's machinery (tool names such as
//     lucy_web_search, sandbox paths such as /app/workspaces/..., raw tool results, its own planning
//     tags) and now and then repeats it. Users must never see that: it is noise to them and it leaks
//     how Lucy is built. Paths become the file's name, tool names become what the tool does,
//     credentials are redacted, JSON dumps become a short note, control tags and "As an AI language
//     model" disclaimers go. Fenced
//     code blocks are left exactly as written, because a user who asked for code or a config file
//     must get it intact.
//  2. [Detone] (Markdown in, Markdown out; tone validation and de-AI). Lucy should sound like a
//     capable colleague, not a chatbot: stock openers ("Certainly!", "Great question!"), closers
//     ("I hope this helps!", "Feel free to reach out"), AI tells ("delve") and exclamation marks
//     in bulk are removed or softened with regular expressions. It only removes filler or swaps a
//     word for a plain synonym, so meaning never changes; code is never touched.
//  3. [NeutralizeMentions]: every special mention (<!channel>, <!here>, <!everyone>, user groups,
//     and the plain words @channel, @here and @everyone) becomes visible text that notifies nobody,
//     unless the requester's own message asked for that mention ([RequestedMentions]), because the
//     model's text may come from a fetched page that wants a channel pinged.
//  4. [Split] (chunks out). One message's markdown blocks hold at most 12,000 characters: long text
//     is cut at the most natural boundary within [MaxMarkdownChunk], and a code block that has to
//     be cut is closed and reopened, so every message renders on its own.
//
// Each chunk becomes one [Message]: a `markdown` block, which Slack renders as standard Markdown
// (tables, nested lists, code, headings), and as its Text the fallback that notifications show and
// that Slack returns as the message's text: the chunk converted by [ToMrkdwn]. Models write
// CommonMark/GFM and Slack's text speaks its own mrkdwn, where **bold** shows up as literal asterisks,
// [text](url) is not a link and tables and headings do not exist; ToMrkdwn translates what has a
// Slack equivalent, renders tables as aligned code blocks and escapes &, < and >, which Slack reads
// as control characters. That fallback is the converter's one use.
//
// [SplitVerbatim] cuts text shown as written (an approval's details) into section-sized pieces.
//
// # Using it from workflows
//
// [Message] holds slack.Block values, which must not cross the Temporal boundary (docs/architecture.md rule 2).
// Pass the Markdown to the posting activity and call [RenderMarkdown] there. [RequestedMentions] is a
// pure function of the requester's message: workflow code calls it and passes the result along.
//
// # Slack conventions this package relies on
//
//   - In mrkdwn, a code block is any line that starts with ```; Slack has no info strings, so
//     ToMrkdwn drops language tags, and [Split] uses this simple prefix rule.
//   - &, < and > are escaped as &amp;, &lt; and &gt; everywhere, code included: that is Slack's wire
//     encoding and Slack decodes it before display, so code still reads verbatim. Only Slack's own
//     tokens (<@U123>, <#C123|general>, <!here>, <https://x|links>) stay raw, a special mention
//     only when it is allowed.
//   - No post sets link_names or parse=full, which would turn more plain words into mentions.
package output
