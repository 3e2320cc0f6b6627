package e2e

import (
	"strings"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// isMemoryStep tells the post-run memory step's model call (prompts/MEMORY_NOTES.md) from the run's.
func isMemoryStep(req fakellm.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" &&
		strings.Contains(req.Messages[0].Text(), "You keep Lucy's team memory")
}

// acmeRenewalProposal is the memory step's answer to "remember that Acme's renewal is in March".
const acmeRenewalProposal = `{"notes": [{"scope": "entity", "about": "Acme", "note": "Acme's renewal is in March.",
 "tags": ["renewal"], "confidence": 0.95, "volatile": false, "said_by": "<@ULOCAL>"}]}`
