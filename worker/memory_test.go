package worker

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/workspace"
)

// conceptEmbed is a toy embeddings model: each word adds to the dimension of its concept, so texts
// that share no word can still be close in meaning ("renewal" and "sign again", "Acme" and "the
// customer").
func conceptEmbed(_, text string) []float32 {
	concepts := map[string]int{
		"renewal": 0, "renew": 0, "renews": 0, "sign": 0, "contract": 0, "again": 0,
		"acme": 1, "customer": 1, "client": 1, "acme's": 1,
		"plants": 2, "watered": 2, "office": 2, "fridays": 2,
	}
	v := make([]float32, 8)
	for _, w := range strings.Fields(strings.ToLower(strings.Trim(text, ".?!"))) {
		if c, ok := concepts[strings.Trim(w, ".?!,")]; ok {
			v[c]++
		} else {
			v[3+len(w)%5] += 0.1
		}
	}
	return v
}

// With LUCY_MODEL_EMBEDDING, a note gets its embedding when written (on the configured endpoint,
// with the configured model) and recall finds a note whose words the query does not share; without
// it, or when the endpoint fails, recall is lexical and finds nothing for such a query.
func TestSemanticRecallFindsWhatWordsMiss(t *testing.T) {
	ctx := context.Background()
	llm := fakellm.New(t, func(int, fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "unused"} })
	llm.SetEmbed(conceptEmbed)
	dir := t.TempDir()
	cfg := &config.Config{LLMBaseURL: llm.BaseURL(), LLMAPIKey: "sk-test", EmbeddingModel: "text-embedding-test"}
	semantic, err := Memory(cfg, workspace.NewLocalAt(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer semantic.Close()
	src := memory.Source{By: "U1", Via: memory.ViaTold}
	renewal, _, err := semantic.Remember(ctx, "T1", memory.Draft{Scope: memory.Entity, About: "Acme", Text: "Acme's renewal is in March.", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := semantic.Remember(ctx, "T1", memory.Draft{Scope: memory.Workspace, Text: "The office plants are watered on Fridays.", Source: src}); err != nil {
		t.Fatal(err)
	}
	if renewal.EmbeddingModel != "text-embedding-test" || len(renewal.Embedding) != 8 {
		t.Fatalf("the note's embedding: model %q, %d dimensions", renewal.EmbeddingModel, len(renewal.Embedding))
	}
	reqs := llm.EmbeddingRequests()
	if len(reqs) != 2 || reqs[0].Model != "text-embedding-test" || len(reqs[0].Input) != 1 || reqs[0].Input[0] != "Acme's renewal is in March." {
		t.Fatalf("embeddings requests: %+v", reqs)
	}

	query := memory.Query{Text: "When does the customer sign again?"}
	lexical, err := Memory(&config.Config{}, workspace.NewLocalAt(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lexical.Close()
	if got, err := lexical.Search(ctx, "T1", query); err != nil || len(got) != 0 {
		t.Fatalf("lexical search found %+v (%v): the query shares words with a note, this test proves nothing", got, err)
	}
	got, err := semantic.Search(ctx, "T1", query)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != renewal.ID {
		t.Fatalf("semantic recall = %+v, want only %s (the plants note is far in meaning)", got, renewal.ID)
	}
	// The scope filter applies to the semantic hits too.
	if got, err := semantic.Search(ctx, "T1", memory.Query{Text: query.Text, Refs: []memory.Ref{{Scope: memory.Workspace}}}); err != nil || len(got) != 0 {
		t.Fatalf("workspace-only semantic recall = %+v, %v", got, err)
	}
	// A worker that restarts reads the stored embeddings: the query costs one call, no note is embedded again.
	restarted, err := Memory(cfg, workspace.NewLocalAt(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	before := len(llm.EmbeddingRequests())
	if got, err := restarted.Search(ctx, "T1", query); err != nil || len(got) != 1 || got[0].ID != renewal.ID {
		t.Fatalf("after a restart: %+v, %v", got, err)
	}
	if n := len(llm.EmbeddingRequests()) - before; n != 1 {
		t.Fatalf("%d embeddings calls for one search after a restart, want 1", n)
	}
	// The endpoint failing: the search is lexical, and a note is still kept (without an embedding).
	llm.FailEmbeddings(http.StatusInternalServerError)
	if got, err := restarted.Search(ctx, "T1", query); err != nil || len(got) != 0 {
		t.Fatalf("search with the endpoint down = %+v, %v", got, err)
	}
	if got, err := restarted.Search(ctx, "T1", memory.Query{Text: "March renewal"}); err != nil || len(got) != 1 {
		t.Fatalf("lexical search with the endpoint down = %+v, %v", got, err)
	}
	n, _, err := restarted.Remember(ctx, "T1", memory.Draft{Scope: memory.Workspace, Text: "Invoices go out on the first.", Source: src})
	if err != nil || len(n.Embedding) != 0 {
		t.Fatalf("a note written with the endpoint down: %+v, %v", n, err)
	}

	// Notes embedded and searched at once on one worker: every one is kept with its vector and found.
	llm.FailEmbeddings(0)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 10 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _, err := restarted.Remember(ctx, "T2", memory.Draft{Scope: memory.Entity, About: fmt.Sprintf("Client %d", i),
				Text: fmt.Sprintf("Client %d renews its contract in spring number%d.", i, i), Source: src})
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := restarted.Search(ctx, "T2", memory.Query{Text: "When does the customer sign again?"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, err := restarted.Search(ctx, "T2", memory.Query{Text: "When does the customer sign again?", Limit: 50}); err != nil || len(got) != 10 {
		t.Fatalf("semantic recall after concurrent writes found %d notes, want 10 (%v)", len(got), err)
	}
}
