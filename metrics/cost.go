package metrics

import "strings"

// price is a model's list price in US dollars per million tokens.
type price struct{ prompt, completion float64 }

// prices are public list prices (per million tokens, standard tier, no caching discount) of the
// model families Lucy's defaults and common configurations use. They only feed an estimate on
// /metrics, never a decision: a model that is missing is counted in tokens but not in dollars, and a
// provider's real invoice (discounts, cached prompts, OpenRouter's fees) stays the source of truth.
// Matching is by the longest prefix of the model name without its provider ("openai/gpt-4o-mini"
// matches "gpt-4o-mini", "gpt-4o-2024-08-06" matches "gpt-4o").
var prices = map[string]price{
	"gpt-4o":                {2.50, 10},
	"gpt-4o-mini":           {0.15, 0.60},
	"gpt-4.1":               {2, 8},
	"gpt-4.1-mini":          {0.40, 1.60},
	"gpt-4.1-nano":          {0.10, 0.40},
	"gpt-5":                 {1.25, 10},
	"gpt-5-mini":            {0.25, 2},
	"gpt-5-nano":            {0.05, 0.40},
	"o3":                    {2, 8},
	"o3-mini":               {1.10, 4.40},
	"o4-mini":               {1.10, 4.40},
	"claude-sonnet-4":       {3, 15},
	"claude-opus-4":         {15, 75},
	"claude-opus-4.5":       {5, 25},
	"claude-3.5-haiku":      {0.80, 4},
	"gemini-2.5-flash":      {0.30, 2.50},
	"gemini-2.5-flash-lite": {0.10, 0.40},
	"gemini-2.5-pro":        {1.25, 10},
}

// EstimateCost is the list price of one call in US dollars; ok is false for a model not in the list.
func EstimateCost(model string, prompt, completion int64) (usd float64, ok bool) {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:] // "openai/gpt-4o" → "gpt-4o"
	}
	name, _, _ = strings.Cut(name, ":") // OpenRouter variants: ":online", ":free"
	best := ""
	for k := range prices {
		if strings.HasPrefix(name, k) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return 0, false
	}
	p := prices[best]
	return (float64(max(prompt, 0))*p.prompt + float64(max(completion, 0))*p.completion) / 1e6, true
}
