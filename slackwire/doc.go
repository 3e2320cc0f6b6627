// Package slackwire holds the rules of Slack's wire format that more than one part of Lucy needs:
// message timestamps and their order, mentions, which message subtypes carry something said, and
// Slack's text limits with the one way to cut text to them.
//
// It is pure (no I/O, no clock, no randomness, no shared mutable state), so workflow code may call
// it: the same input gives the same output on every replay. Changing what a function here returns
// changes what open workflows compute, so a change must keep recorded histories replaying.
package slackwire
