// Package schedules holds recurring jobs and monitors whole: their tools (lucy_*_cron,
// lucy_*_heartbeat) with their handlers, the workflows their Temporal Schedules start (scheduled_job,
// job_slots, monitor), the activities those firings run (JobTiming,
// CheckScheduleAccess, CheckMonitor, SaveMonitorState), and their wire names. It is its own package
// so that the capability can be read, tested and changed in one place, as one domain.
//
// Each job or monitor is a Temporal Schedule (cron:{team}:{slug}, heartbeat:{team}:{slug}):
// durable, shared by every replica, visible and editable in the Web UI. A job's firing hands its
// instruction to the lane of the thread it posts in (package workflows), so it is an ordinary run
// there; a monitor's firing checks a URL without a model and posts only when the state changes.
//
// Imports: this package imports workflows (the lane a firing hands its instruction to, the activity
// options), activities (the Slack posting activity) and tools (the tool registry); none of them
// imports it. What it needs of the Slack and web domains (the access rule, clients, the fetch guard)
// it declares as the Slack and Web interfaces; toolset passes their implementations. Its workflow
// code follows the determinism rules of docs/architecture.md (rule 1) and is checked by
// workflowcheck with package workflows.
package schedules
