package filesearch

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/xuri/excelize/v2"
	"golang.org/x/image/font/gofont/goregular"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

const team = tooltest.Team

// worker is one worker's file tools and search over a workspace store.
type worker struct {
	*tools.Runner
	st workspace.Store
}

func newWorker(t *testing.T, st workspace.Store) *worker {
	t.Helper()
	ws := files.New(st, nil)
	return &worker{Runner: tooltest.Runner(t, ws, documents.New(ws, nil), New(ws)), st: st}
}

// search runs lucy_search_files for team tm and returns its text.
func (w *worker) search(t *testing.T, tm, args string) string {
	t.Helper()
	inv := tooltest.Invocation(SearchFiles, args, "ULOCAL")
	inv.Team = tm
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := w.Run(ctx, inv)
	if err != nil {
		t.Fatalf("%s(%s): %v", SearchFiles, args, err)
	}
	if out.IsError {
		t.Fatalf("%s(%s): tool error: %s", SearchFiles, args, out.Content)
	}
	t.Logf("%s(%s) for %s:\n%s", SearchFiles, args, tm, out.Content)
	return out.Content
}

func (w *worker) put(t *testing.T, tm, rel string, data []byte) {
	t.Helper()
	if _, err := w.st.Write(t.Context(), tm, rel, data, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
}

func wantHit(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the search result lacks %q:\n%s", w, got)
		}
	}
}

func wantNoHit(t *testing.T, got string) {
	t.Helper()
	if !strings.HasPrefix(got, "No passage") {
		t.Errorf("want no passage, got:\n%s", got)
	}
}

// fortyPagePDF lays out 40 pages with fpdf in the Go font, as lucy_generate_pdf does, with the term
// only on page 40.
func fortyPagePDF(t testing.TB, term string) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.AddUTF8FontFromBytes("gosans", "", goregular.TTF)
	p.SetFont("gosans", "", 11)
	for i := 1; i <= 40; i++ {
		p.AddPage()
		body := fmt.Sprintf("Chapter %d of the annual review. Revenue, staffing and the office moves of the year.", i)
		if i == 40 {
			body += " The " + term + " agreement was signed in Zürich."
		}
		p.MultiCell(0, 6, body, "", "L", false)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// docx builds a Word document of paragraphs: the package parts ECMA-376 requires of one (content
// types, the package relationship to the main document, word/document.xml in WordprocessingML).
func docx(t *testing.T, paragraphs ...string) []byte {
	t.Helper()
	var body strings.Builder
	for _, p := range paragraphs {
		fmt.Fprintf(&body, `<w:p><w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, html.EscapeString(p))
	}
	parts := []struct{ name, text string }{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range parts {
		f, err := zw.Create(p.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(p.text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSearchFindsAPDFPage(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "reports/annual.pdf", fortyPagePDF(t, "Quetzalcoatl"))
	got := w.search(t, team, `{"query": "quetzalcoatl agreement"}`)
	wantHit(t, got, "1. reports/annual.pdf, page 40:", "**Quetzalcoatl**")
	if strings.Contains(got, "page 39") {
		t.Errorf("a page without the term is among the first hits:\n%s", got)
	}
	// A word of every page finds pages, each named.
	wantHit(t, w.search(t, team, `{"query": "chapter", "limit": 2}`), "reports/annual.pdf, page")
}

func TestSearchFindsWordAndExcel(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "contracts/acme.docx", docx(t, "Master services agreement", "", "Payment is due within thirty days.",
		"The renewal is automatic unless the customer objects in writing."))
	f := excelize.NewFile()
	if err := f.SetSheetName("Sheet1", "Budget"); err != nil {
		t.Fatal(err)
	}
	for row := 1; row <= 20; row++ {
		item := fmt.Sprintf("line item %d", row)
		if row == 12 {
			item = "Flamingo sculptures"
		}
		if err := f.SetSheetRow("Budget", fmt.Sprintf("A%d", row), &[]any{item, row * 100}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	w.put(t, team, "finance/budget.xlsx", buf.Bytes())
	w.put(t, team, "finance/people.csv", []byte("name,role\r\nAda,engineer\r\nGrace,admiral\r\n"))

	wantHit(t, w.search(t, team, `{"query": "renewal objects"}`), "contracts/acme.docx, paragraphs 1-4:", "**renewal**")
	wantHit(t, w.search(t, team, `{"query": "flamingo"}`), "finance/budget.xlsx, sheet Budget, row 12:", "**Flamingo** sculptures | 1200")
	wantHit(t, w.search(t, team, `{"query": "admiral"}`), "finance/people.csv, row 3:", "Grace | **admiral**")
	// The folder narrows the search.
	wantNoHit(t, w.search(t, team, `{"query": "flamingo", "folder": "contracts"}`))
	wantHit(t, w.search(t, team, `{"query": "flamingo", "folder": "finance"}`), "finance/budget.xlsx")
}

// The index follows the workspace whoever writes it: the file tools of this worker, or another
// worker over the same store (an S3 bucket every worker shares), with the old text gone at once.
func TestSearchFollowsWritesAndDeletes(t *testing.T) {
	for _, s := range tooltest.WorkspaceStores(t) {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Store()
			w, other := newWorker(t, st), newWorker(t, st)
			wantNoHit(t, w.search(t, team, `{"query": "pelican"}`))
			tooltest.MustRun(t, w, tools.WriteFile, `{"path": "notes/birds.md", "content": "# Birds\n\nThe pelican nests by the harbour."}`)
			wantHit(t, w.search(t, team, `{"query": "pelican"}`), "notes/birds.md, lines 1-3:", "**pelican**")

			// Overwritten by another worker: the new text is found and the old is not.
			other.put(t, team, "notes/birds.md", []byte("# Birds\n\nThe cormorant dries its wings on the pier, all morning long."))
			wantNoHit(t, w.search(t, team, `{"query": "pelican"}`))
			wantHit(t, w.search(t, team, `{"query": "cormorant"}`), "notes/birds.md")

			// Deleted with the file tool (approved): found no more, here or on the other worker.
			out := tooltest.RunApproved(t, w, tools.DeleteFile, `{"path": "notes/birds.md"}`, true, "")
			tooltest.WantOK(t, out, "Deleted notes/birds.md")
			wantNoHit(t, w.search(t, team, `{"query": "cormorant"}`))
			wantNoHit(t, other.search(t, team, `{"query": "cormorant"}`))
		})
	}
}

func TestSearchKeepsTeamsApart(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "plan.md", []byte("Project Heliotrope launches in May."))
	w.put(t, "TOTHER", "plan.md", []byte("Project Marigold launches in June."))
	wantHit(t, w.search(t, team, `{"query": "heliotrope"}`), "plan.md")
	wantNoHit(t, w.search(t, team, `{"query": "marigold"}`))
	wantHit(t, w.search(t, "TOTHER", `{"query": "marigold"}`), "plan.md")
	wantNoHit(t, w.search(t, "TOTHER", `{"query": "heliotrope"}`))
}

// A file named for the term, or opening with it, ranks above one that mentions it in passing.
func TestSearchRanksTitleFirst(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "misc/weekly.md", []byte("Weekly notes\n\nWe talked about hiring, the kestrel mascot, budgets and the kestrel logo colours."))
	w.put(t, team, "projects/launch.md", []byte("Kestrel\n\nThe launch of the new product line happens after the summer, with a press day, "+
		"a partner webinar and a refreshed website for every market we sell in."))
	got := w.search(t, team, `{"query": "kestrel"}`)
	if !strings.Contains(got, "1. projects/launch.md") || !strings.Contains(got, "2. misc/weekly.md") {
		t.Errorf("the file titled Kestrel should rank first:\n%s", got)
	}
}

func TestSearchSkipsWhatHasNoText(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "image.png", []byte("\x89PNG\r\n\x1a\n\x00\x00binary ocelot"))
	w.put(t, team, "broken.pdf", []byte("%PDF-1.7 not really ocelot"))
	w.put(t, team, "broken.docx", []byte("PK not a zip ocelot"))
	w.put(t, team, "ok.txt", []byte("an ocelot"))
	got := w.search(t, team, `{"query": "ocelot"}`)
	wantHit(t, got, "1. ok.txt, line 1:")
	if strings.Count(got, "ocelot**") != 1 {
		t.Errorf("files without readable text were searched:\n%s", got)
	}
}

func TestSearchArgs(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	_, err := tooltest.Run(t, w, SearchFiles, `{"query": "the and of"}`)
	tooltest.WantArgError(t, err, SearchFiles, "no words to search for")
	_, err = tooltest.Run(t, w, SearchFiles, `{"query": "x y", "folder": "../other"}`)
	tooltest.WantArgError(t, err, SearchFiles, `uses ".."`)
}

// A team's text beyond what the index holds is left out and said so, and taken in once there is room.
func TestSearchBoundsATeamsText(t *testing.T) {
	defer func(n int) { maxTeamText = n }(maxTeamText)
	maxTeamText = 40
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "a.txt", []byte("the aardvark digs at night, mostly."))
	w.put(t, team, "b.txt", []byte("the badger digs at dusk."))
	got := w.search(t, team, `{"query": "digs"}`)
	wantHit(t, got, "1 passage(s)", "a.txt", "1 file(s) were not searched")
	got = w.search(t, team, `{"query": "badger"}`)
	wantHit(t, got, "No passage", "1 file(s) were not searched")
	tooltest.RunApproved(t, w, tools.DeleteFile, `{"path": "a.txt"}`, true, "")
	got = w.search(t, team, `{"query": "badger"}`)
	wantHit(t, got, "1. b.txt, line 1:")
	if strings.Contains(got, "not searched") {
		t.Errorf("b.txt fits now:\n%s", got)
	}
}

// Searches while files are written, on one worker: the refreshes of a team queue behind one another
// and the index's one connection (run with -race).
func TestSearchWhileWriting(t *testing.T) {
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	done := make(chan error, 8)
	for g := range 4 {
		go func() {
			for i := range 10 {
				rel := fmt.Sprintf("g%d/f%d.txt", g, i)
				if _, err := w.st.Write(t.Context(), team, rel, []byte(fmt.Sprintf("wombat %d %d", g, i)), workspace.Cond{}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		go func() {
			for range 10 {
				inv := tooltest.Invocation(SearchFiles, `{"query": "wombat"}`, "ULOCAL")
				if out, err := w.Run(t.Context(), inv); err != nil || out.IsError {
					done <- fmt.Errorf("search: %v %s", err, out.Content)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got := w.search(t, team, `{"query": "wombat", "limit": 30}`)
	wantHit(t, got, "30 passage(s)", "(40 file(s) searched)")
}

// BenchmarkSearch measures a search of a workspace of 500 text files and a 40-page PDF, once
// indexed: the listing and the query, nothing read again.
func BenchmarkSearch(b *testing.B) {
	st := workspace.NewLocal(b.TempDir())
	ws := files.New(st, nil)
	s := New(ws)
	r := tooltest.Runner(b, ws, s)
	for i := range 500 {
		text := strings.Repeat(fmt.Sprintf("Line %d of note %d about budgets, hiring and the roadmap.\n", i, i), 40)
		if _, err := st.Write(b.Context(), team, fmt.Sprintf("notes/n%03d.md", i), []byte(text), workspace.Cond{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.Write(b.Context(), team, "annual.pdf", fortyPagePDF(b, "Quetzalcoatl"), workspace.Cond{}); err != nil {
		b.Fatal(err)
	}
	inv := tooltest.Invocation(SearchFiles, `{"query": "quetzalcoatl roadmap"}`, "ULOCAL")
	start := time.Now()
	if _, err := r.Run(b.Context(), inv); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	for b.Loop() {
		if _, err := r.Run(b.Context(), inv); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(first.Milliseconds()), "first-search-ms")
}

// A PDF in one of the standard 8-bit fonts (no ToUnicode map), as many producers write them, is read
// through the reader library's own extraction.
func TestSearchReadsASimpleFontPDF(t *testing.T) {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetFont("Helvetica", "", 12)
	p.AddPage()
	p.Cell(0, 10, "Cover page")
	p.AddPage()
	p.Cell(0, 10, "The capybara committee meets on Fridays.")
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, workspace.NewLocal(t.TempDir()))
	w.put(t, team, "minutes.pdf", buf.Bytes())
	wantHit(t, w.search(t, team, `{"query": "capybara committee"}`), "1. minutes.pdf, page 2:", "**capybara**")
}
