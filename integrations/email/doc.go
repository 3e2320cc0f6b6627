// Package email is a team's mailbox whole: connecting it (lucy_connect_email, lucy_disconnect_email,
// its settings in Lucy's state store and its password in the credential store), the five mail tools
// over IMAP and SMTP (lucy_read_emails, lucy_search_emails, lucy_get_email_thread, lucy_send_email,
// lucy_reply_to_email), and the listener: a Temporal Schedule per mailbox whose firings post a
// summary of each new message to the mailbox's channel and hand the team's instruction to a lane.
//
// # Mail is data
//
// A message's text comes from anyone who can send mail to the team: every tool result frames it as
// data, HTML is reduced to text (links shown, never followed) and nothing in it is acted upon without
// the model deciding to, under the same approvals as any other request.
//
// # At most once
//
// A sent message's Message-ID is derived from the run and the tool call (sentID), so every attempt
// of one call (a retried activity, a resumed or reset run) composes the same message; before it
// sends, an attempt looks for that Message-ID in the Sent folder, where every send saves its copy
// after the SMTP server accepted it. What remains is the window between the server's acceptance
// and the saved copy: a crash there, and a later attempt sends again (see docs/using.md, "Sending is at
// most once").
package email
