package activities_test

// The route's tests (route_mail_test.go) expect the compiled-in tools of the domains a worker links to
// be declared (tools.Lookup): Slack reads, keys, skills and memory. The capabilities' packages
// import this one (their steps use the core's), so only an external test file can link them.
import (
	_ "github.com/lucy-agent/lucy/integrations"
	_ "github.com/lucy-agent/lucy/memory"
	_ "github.com/lucy-agent/lucy/skills"
	_ "github.com/lucy-agent/lucy/tools/slacktools"
)
