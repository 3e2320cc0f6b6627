package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// SearchConfig is how lucy_web_search reaches its provider; a zero Provider means web search is
// not configured.
type SearchConfig struct {
	Provider string
	APIKey   string
	// Model is the online model (openrouter, perplexity).
	Model string
	// BaseURL overrides the provider's endpoint (a proxy, a self-hosted gateway, tests).
	BaseURL string
}

// Search providers (LUCY_SEARCH_PROVIDER).
const (
	SearchOpenRouter = "openrouter"
	SearchPerplexity = "perplexity"
	SearchBrave      = "brave"
	SearchTavily     = "tavily"
)

// DefaultSearchBase is each provider's API base.
var DefaultSearchBase = map[string]string{
	SearchOpenRouter: "https://openrouter.ai/api/v1",
	SearchPerplexity: "https://api.perplexity.ai",
	SearchBrave:      "https://api.search.brave.com/res/v1",
	SearchTavily:     "https://api.tavily.com",
}

// DefaultSearchModel is each online-model provider's default model.
var DefaultSearchModel = map[string]string{
	SearchOpenRouter: "google/gemini-2.5-flash:online", // grounded Gemini, with OpenRouter's web plugin
	SearchPerplexity: "sonar",
}

const (
	defaultSearchResults = 5
	maxSearchResults     = 10
	maxSearchBody        = 2 << 20
)

// lucy_web_search searches the web through a configured provider (by default an online model on
// OpenRouter). Providers: an OpenAI-compatible online model (OpenRouter's ":online" models, which
// return url_citation annotations; Perplexity's sonar models, which return search_results), or a
// search API (Brave Search, Tavily) that returns titles, URLs and snippets.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.WebSearch,
		Description: "Search the web. Returns results with titles, URLs and snippets (and, with some providers, a short " +
			"answer written from them). Read the pages that matter with lucy_web_fetch before relying on them, and " +
			"cite their URLs.",
		Idempotent: true,
		Human:      "searching the web",
		Long:       true,
	},
	Required: []string{"query"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("query", "What to search for, as you would type it into a search engine.", 1, 400),
			tools.IntProp("count", "How many results, 1 to 10 (default 5).", 1, maxSearchResults),
		}
	},
}, (*Fetcher).webSearch)

type webSearchArgs struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

// searchResult is one hit.
type searchResult struct {
	Title, URL, Snippet, Date string
}

func (f *Fetcher) webSearch(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args webSearchArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	cfg := f.search
	if cfg.Provider == "" {
		return tools.Output{IsError: true, Content: "Error: web search is not configured for this Lucy. An operator sets " +
			"LUCY_SEARCH_PROVIDER (openrouter, perplexity, brave or tavily) and LUCY_SEARCH_API_KEY (OpenRouter uses " +
			"OPENROUTER_API_KEY by default). Meanwhile, fetch pages you know the address of with lucy_web_fetch."}, nil
	}
	if args.Count <= 0 {
		args.Count = defaultSearchResults
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultSearchBase[cfg.Provider]
	}
	var (
		answer  string
		results []searchResult
		err     error
	)
	switch cfg.Provider {
	case SearchOpenRouter, SearchPerplexity:
		answer, results, err = f.searchOnlineModel(ctx, cfg, base, args)
	case SearchBrave:
		results, err = f.searchBrave(ctx, cfg, base, args)
	case SearchTavily:
		answer, results, err = f.searchTavily(ctx, cfg, base, args)
	default:
		return tools.Output{}, fmt.Errorf("%s: unknown search provider %q", tools.WebSearch, cfg.Provider)
	}
	if err != nil {
		var rejected *searchRejected
		if errors.As(err, &rejected) {
			return tools.Output{IsError: true, Content: "Error: " + rejected.Error()}, nil
		}
		return tools.Output{}, err
	}
	return tools.Output{Content: formatSearch(args.Query, cfg.Provider, answer, results, args.Count)}, nil
}

func formatSearch(query, provider, answer string, results []searchResult, count int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Web search for %q (%s):\n", query, provider)
	if answer != "" {
		fmt.Fprintf(&b, "\nAnswer from the search provider (check it against the sources):\n%s\n", strings.TrimSpace(answer))
	}
	if len(results) == 0 {
		b.WriteString("\nNo results.")
		return b.String()
	}
	b.WriteString("\nResults:\n")
	for i, res := range results {
		if i == count {
			break
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, firstNonEmpty(res.Title, res.URL), res.URL)
		if res.Date != "" {
			fmt.Fprintf(&b, "   (%s)\n", res.Date)
		}
		if s := strings.Join(strings.Fields(res.Snippet), " "); s != "" {
			fmt.Fprintf(&b, "   %s\n", tools.Truncate(s, 400))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// searchRejected is a provider's refusal that no retry fixes (a wrong key, no credit): the model
// reads it and tells the person.
type searchRejected struct{ msg string }

func (e *searchRejected) Error() string { return e.msg }

// searchDo sends one request to the provider and decodes its JSON answer into v.
func (f *Fetcher) searchDo(ctx context.Context, req *http.Request, provider string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("Accept", "application/json")
	resp, err := f.searchHTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil && req.Context().Err() == nil {
			return ctx.Err()
		}
		return &tools.TransientError{Tool: tools.WebSearch, Err: fmt.Errorf("%s: %v", provider, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return &tools.TransientError{Tool: tools.WebSearch, Err: fmt.Errorf("%s: read the answer: %v", provider, err)}
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusPaymentRequired:
		return &searchRejected{msg: fmt.Sprintf("the search provider (%s) refused the request (HTTP %d: %s): its API key "+
			"(LUCY_SEARCH_API_KEY) is wrong, lacks access or credit. Tell the person an operator must fix it.", provider, code, errorText(body))}
	case code == http.StatusTooManyRequests || code >= 500:
		return &tools.TransientError{Tool: tools.WebSearch, Err: fmt.Errorf("%s: HTTP %d: %s", provider, code, errorText(body)),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	case code >= 400:
		return &searchRejected{msg: fmt.Sprintf("the search provider (%s) rejected the query (HTTP %d: %s).", provider, code, errorText(body))}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &tools.TransientError{Tool: tools.WebSearch, Err: fmt.Errorf("%s: unreadable answer: %v", provider, err)}
	}
	return nil
}

// errorText is a short message out of a provider's error body.
func errorText(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	_ = json.Unmarshal(body, &e)
	var inner struct {
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	var s string
	switch {
	case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
		s = inner.Message
	case json.Unmarshal(e.Error, &s) == nil && s != "":
	case e.Message != "":
		s = e.Message
	case json.Unmarshal(e.Detail, &inner) == nil && (inner.Message != "" || inner.Detail != ""):
		s = firstNonEmpty(inner.Message, inner.Detail)
	case json.Unmarshal(e.Detail, &s) == nil && s != "":
	default:
		s = strings.TrimSpace(string(body))
	}
	return tools.Truncate(strings.Join(strings.Fields(s), " "), 200)
}

func (f *Fetcher) searchOnlineModel(ctx context.Context, cfg SearchConfig, base string, args webSearchArgs) (string, []searchResult, error) {
	model := cfg.Model
	if model == "" {
		model = DefaultSearchModel[cfg.Provider]
	}
	body, _ := json.Marshal(map[string]any{
		"model": model,
		"messages": []map[string]string{
			{"role": "system", "content": "Search the web and answer the query in a few sentences, citing your sources."},
			{"role": "user", "content": args.Query},
		},
	})
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	req.Header.Set("Content-Type", "application/json")
	var resp struct {
		Choices []struct {
			Message struct {
				Content     string `json:"content"`
				Annotations []struct {
					Type        string `json:"type"`
					URLCitation struct {
						URL     string `json:"url"`
						Title   string `json:"title"`
						Content string `json:"content"`
					} `json:"url_citation"`
				} `json:"annotations"`
			} `json:"message"`
		} `json:"choices"`
		Citations     []string `json:"citations"`
		SearchResults []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Date    string `json:"date"`
			Snippet string `json:"snippet"`
		} `json:"search_results"`
	}
	if err := f.searchDo(ctx, req, cfg.Provider, &resp); err != nil {
		return "", nil, err
	}
	if len(resp.Choices) == 0 {
		return "", nil, &tools.TransientError{Tool: tools.WebSearch, Err: fmt.Errorf("%s: the answer has no choices", cfg.Provider)}
	}
	msg := resp.Choices[0].Message
	var results []searchResult
	seen := map[string]bool{}
	add := func(res searchResult) {
		if res.URL != "" && !seen[res.URL] {
			seen[res.URL] = true
			results = append(results, res)
		}
	}
	for _, a := range msg.Annotations {
		if a.Type == "url_citation" {
			add(searchResult{Title: a.URLCitation.Title, URL: a.URLCitation.URL, Snippet: a.URLCitation.Content})
		}
	}
	for _, s := range resp.SearchResults {
		add(searchResult{Title: s.Title, URL: s.URL, Date: s.Date, Snippet: s.Snippet})
	}
	for _, u := range resp.Citations {
		add(searchResult{URL: u})
	}
	return msg.Content, results, nil
}

func (f *Fetcher) searchBrave(ctx context.Context, cfg SearchConfig, base string, args webSearchArgs) ([]searchResult, error) {
	q := url.Values{"q": {args.Query}, "count": {strconv.Itoa(args.Count)}}
	req, err := http.NewRequest(http.MethodGet, base+"/web/search?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Subscription-Token", cfg.APIKey)
	var resp struct {
		Web struct {
			Results []struct {
				Title         string   `json:"title"`
				URL           string   `json:"url"`
				Description   string   `json:"description"`
				Age           string   `json:"age"`
				ExtraSnippets []string `json:"extra_snippets"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := f.searchDo(ctx, req, SearchBrave, &resp); err != nil {
		return nil, err
	}
	var out []searchResult
	for _, res := range resp.Web.Results {
		out = append(out, searchResult{Title: stripTags(res.Title), URL: res.URL, Snippet: stripTags(res.Description), Date: res.Age})
	}
	return out, nil
}

func (f *Fetcher) searchTavily(ctx context.Context, cfg SearchConfig, base string, args webSearchArgs) (string, []searchResult, error) {
	body, _ := json.Marshal(map[string]any{"query": args.Query, "max_results": args.Count, "search_depth": "basic", "include_answer": true})
	req, err := http.NewRequest(http.MethodPost, base+"/search", bytes.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	req.Header.Set("Content-Type", "application/json")
	var resp struct {
		Answer  string `json:"answer"`
		Results []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			Content       string `json:"content"`
			PublishedDate string `json:"published_date"`
		} `json:"results"`
	}
	if err := f.searchDo(ctx, req, SearchTavily, &resp); err != nil {
		return "", nil, err
	}
	var out []searchResult
	for _, res := range resp.Results {
		out = append(out, searchResult{Title: res.Title, URL: res.URL, Snippet: res.Content, Date: res.PublishedDate})
	}
	return resp.Answer, out, nil
}

// stripTags removes the <strong> highlighting search APIs put in titles and snippets.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstNonEmpty returns the first of vals that is not blank, or "".
func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
