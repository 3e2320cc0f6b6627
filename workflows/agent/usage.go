package agent

// Usage is token usage of one model. It lives here, below the run and its sub-agents, because both
// report it (workflows.Usage is this type): a sub-agent's rolls up into its parent run's.
type Usage struct {
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	Calls            int   `json:"calls"`
}
