// Package intent classifies the text of a human message, deterministically and at no cost: no
// model call, no I/O, no clock, no randomness, no dependence on map iteration order. The gateway
// uses it for control intents (cancel, status); the workflows use it for the router, the fast path,
// approvals, thread interrupts and reactions. Every function is pure, so workflow code may call it
// directly and replay gets the same answer; a change to a rule changes what new messages do, so a
// workflow that branches on a classifier inside a running execution puts the change behind
// workflow.GetVersion.
//
// # Principle
//
// Be conservative: a misclassified control intent is worse than a missed one. If "stop the EC2
// instances" were taken for a cancel, Lucy would drop the user's request and kill her current run;
// if a real "stop" is missed, it reaches the agent, which can still stop. So the control classifiers
// (Cancel, IsStatusQuery, ApprovalAnswer, FastPath) accept only short messages made entirely of
// phrases they know, and say no to anything with a word left over, a question where none belongs,
// code or a link. The router (Classify) and Reaction, whose mistakes cost little, read keywords in
// longer text instead.
//
// # Classifiers
//
//   - Mentions: the classifiers read text through slackwire.StripMentions, which removes <@U…> and
//     broadcast mentions and collapses whitespace; the agent sees the same text.
//   - Cancel: "cancel that", "stop", "nvm", "hold on, stop"; dropQueued for "cancel everything".
//     Used by the gateway, which signals `cancel`.
//   - IsStatusQuery: "what are you working on?", "status?", "any progress?". Used by the
//     gateway, which answers from the `status` query.
//   - ApprovalAnswer: Yes / No / Unclear for a natural-language reply to a pending proposal ("yes,
//     create it", "go ahead", 👍, "hold off"). The confirmation guard. Used by
//     the lane, which sends the `approval` signal.
//   - FastPath: greetings, thanks and acknowledgements answered at once from varied reply pools,
//     picked by a seed the workflow passes.
//   - Classify: intent, model tier, prompt modules and whether to plan. Used by the Route
//     activity.
//   - ThreadInterrupt: Fold a message into the busy run of its thread when it adds to or corrects
//     the task ("also include X", "actually make it Y"), or Queue it (lanes run one request at a time).
//   - Reaction: the emoji Lucy adds on receipt.
//
// # Order of checks
//
// Several classifiers accept the same words ("ok" is an approval, an acknowledgement and a fast-path
// message; "stop" is a cancel and a denial), so callers ask in this order: a pending approval
// (ApprovalAnswer), then Cancel, then IsStatusQuery, then, with a run busy in the thread,
// ThreadInterrupt, otherwise FastPath, and finally Classify for the run.
//
// # Normalization
//
// All classifiers read the same normalized words: mentions removed; links and code blocks replaced
// by placeholders (their words are never read, so a URL or a log line saying "stop" changes
// nothing); Slack's &lt; &gt; &amp; undone; lowercase; apostrophes dropped ("don't" → "dont");
// common chat spellings mapped ("pls", "thx", "u", "okay", "k"); stretched words squeezed
// ("thanksss", "heyyy"); laughter folded ("hahaha", "lolol"); emoji reduced to one name whatever
// their form (":thumbsup:", ":+1::skin-tone-3:", "👍" and "+1" are all :+1:). Phrases in the
// lexicons are written as people type them and normalized the same way.
package intent
