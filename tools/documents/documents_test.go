package documents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
)

// sharedFile returns the content of the file shared in the test thread under name.
func (w *slackWorkspace) sharedFile(t *testing.T, name string) []byte {
	t.Helper()
	for _, m := range w.srv.Messages("CLOCAL", "") {
		for _, f := range append(m.Files, filesOf(w.srv, m.TS)...) {
			if full, ok := w.srv.File(f.ID); ok && full.Name == name && full.Uploaded {
				return full.Content
			}
		}
	}
	t.Fatalf("%s was not shared", name)
	return nil
}

func filesOf(srv *localslack.Server, root string) []localslack.File {
	var out []localslack.File
	for _, m := range srv.Messages("CLOCAL", root) {
		out = append(out, m.Files...)
	}
	return out
}

func (w *slackWorkspace) workspaceFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.r.dir, "workspaces", testTeam, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGenerateExcelReadsBack(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it") // the thread the tools share in (tools.Invocation.ThreadTS)
	out := mustRun(t, w.r, GenerateExcel, `{"filename": "reports/q3", "sheets": [
		{"name": "Summary", "rows": [["Metric", "Value"], ["Signups", 1250], ["Churned", 31.5], ["Active", true], ["Total", "=B2+B3"], ["Note", null]]},
		{"name": "Détails – Q3", "rows": [["Date", "Region", "Amount"], ["2026-07-01", "Zürich", 10], ["2026-07-02T14:30:00Z", "Москва", 32],
			["'2026-07-03", "'=not a formula", "a much longer text than the others in its column"]]}
	]}`)
	wantOK(t, out, "Created reports/q3.xlsx", "Summary (6 rows)", "shared it in the thread")
	for _, data := range [][]byte{w.workspaceFile(t, "reports/q3.xlsx"), w.sharedFile(t, "q3.xlsx")} {
		f, err := excelize.OpenReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.GetSheetList(); len(got) != 2 || got[0] != "Summary" || got[1] != "Détails – Q3" {
			t.Errorf("sheets %v", got)
		}
		check := func(sheet, cell, want string, typ excelize.CellType) {
			t.Helper()
			v, _ := f.GetCellValue(sheet, cell)
			ct, _ := f.GetCellType(sheet, cell)
			if v != want || ct != typ {
				t.Errorf("%s!%s = %q (type %v), want %q (type %v)", sheet, cell, v, ct, want, typ)
			}
		}
		check("Summary", "A1", "Metric", excelize.CellTypeSharedString)
		check("Summary", "B2", "1250", excelize.CellTypeUnset)
		check("Summary", "B3", "31.5", excelize.CellTypeUnset)
		check("Summary", "B4", "TRUE", excelize.CellTypeBool)
		check("Détails – Q3", "B3", "Москва", excelize.CellTypeSharedString)
		check("Détails – Q3", "A2", "2026-07-01", excelize.CellTypeUnset)
		check("Détails – Q3", "A3", "2026-07-02 14:30", excelize.CellTypeUnset)
		// An apostrophe keeps a date or a formula as text.
		check("Détails – Q3", "A4", "2026-07-03", excelize.CellTypeSharedString)
		check("Détails – Q3", "B4", "=not a formula", excelize.CellTypeSharedString)
		if formula, _ := f.GetCellFormula("Détails – Q3", "B4"); formula != "" {
			t.Errorf("B4 has formula %q", formula)
		}
		// Dates are numbers formatted as dates, so that they sort and compute.
		if raw, _ := f.GetCellValue("Détails – Q3", "A2", excelize.Options{RawCellValue: true}); raw != "46204" {
			t.Errorf("A2 raw value %q, want the serial date 46204", raw)
		}
		if formula, _ := f.GetCellFormula("Summary", "B5"); formula != "B2+B3" {
			t.Errorf("formula %q", formula)
		}
		style, _ := f.GetCellStyle("Summary", "A1")
		if st, err := f.GetStyle(style); err != nil || st.Font == nil || !st.Font.Bold || st.Fill.Pattern != 1 || len(st.Fill.Color) != 1 {
			t.Errorf("header not bold on a fill: %+v %v", st, err)
		}
		if style, _ := f.GetCellStyle("Summary", "A2"); style != 0 {
			if st, _ := f.GetStyle(style); st.Font != nil && st.Font.Bold {
				t.Errorf("a body cell is bold")
			}
		}
		for _, sheet := range f.GetSheetList() {
			if panes, err := f.GetPanes(sheet); err != nil || !panes.Freeze || panes.YSplit != 1 || panes.TopLeftCell != "A2" {
				t.Errorf("%s: header not frozen: %+v %v", sheet, panes, err)
			}
		}
		// Columns are as wide as their content, within bounds.
		narrow, _ := f.GetColWidth("Détails – Q3", "B")
		wide, _ := f.GetColWidth("Détails – Q3", "C")
		if narrow < 8 || wide <= narrow || wide > 60 {
			t.Errorf("column widths B %.1f, C %.1f", narrow, wide)
		}
	}
}

// A workbook written again from the same sheets is the same file: it is not replaced, and not shared
// twice; different sheets wait for a person's approval.
func TestGenerateExcelRepeatAndReplace(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it")
	uploads := func() int { return w.srv.Calls("files.completeUploadExternal") }
	args := `{"filename": "q.xlsx", "sheets": [{"name": "S", "rows": [["a", "b"], [1, 2]]}]}`
	wantOK(t, mustRun(t, w.r, GenerateExcel, args), "Created q.xlsx")
	w.r.now = func() time.Time { return time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) }
	wantOK(t, mustRun(t, w.r, GenerateExcel, args), "Found q.xlsx already in the workspace with exactly this content",
		"already shared in the thread")
	if n := uploads(); n != 1 {
		t.Errorf("%d uploads, want 1", n)
	}
	wantHeld(t, mustRun(t, w.r, GenerateExcel, `{"filename": "q.xlsx", "sheets": [{"name": "S", "rows": [["a", "b"], [1, 3]]}]}`),
		"overwriting q.xlsx")
	if n := uploads(); n != 1 {
		t.Errorf("a held workbook was shared (%d uploads)", n)
	}
}

func TestGenerateExcelBadInput(t *testing.T) {
	r := newTestDocs(t, nil)
	for _, tt := range []struct{ args, want string }{
		{`{"filename": "a.xlsx", "sheets": [{"name": "Q3/Q4", "rows": [["a"]]}]}`, "may not contain"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "` + strings.Repeat("x", 32) + `", "rows": [["a"]]}]}`, "too long"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [["a"]]}, {"name": "a", "rows": [["b"]]}]}`, "two sheets are named"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [[{"x": 1}]]}]}`, "must be one of: string, number, boolean, null"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A"}]}`, `missing the field "rows"`},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [["a"]], "color": "red"}]}`, "fields it does not take"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [` + strings.Repeat(`["a","b","c","d","e","f","g","h","i","j"],`, 20_000) + `["x"]]}]}`, "the limit is 200000"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [` + strings.Repeat(`[],`, 200_000) + `[]]}]}`, "200001 cells; the limit is 200000"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [[` + strings.Repeat(`1,`, 16_384) + `1]]}]}`, "row 1 has 16385 cells; a sheet has at most 16384 columns"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "history", "rows": [["a"]]}]}`, "the name History is reserved by Excel"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "'Q3", "rows": [["a"]]}]}`, "apostrophe"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [["` + strings.Repeat("x", 32_768) + `"]]}]}`, `cell A1: 32768 characters; a cell holds at most 32767`},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [["=` + strings.Repeat("1+", 4100) + `1"]]}]}`, "Excel takes at most 8192"},
	} {
		out, err := run(t, r, GenerateExcel, tt.args)
		if err == nil {
			t.Fatalf("want %q, got %s", tt.want, out.Content)
		}
		wantArgError(t, err, GenerateExcel, tt.want)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.dir, "workspaces", testTeam)); len(entries) != 0 {
		t.Errorf("bad calls wrote %v", entries)
	}
}

// A workbook over the file limit is refused with a way out, and nothing is written.
func TestGenerateExcelTooLarge(t *testing.T) {
	r := newTestDocs(t, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"filename": "big.xlsx", "sheets": [{"name": "Data", "rows": [`)
	for i := range 12_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for j := range 8 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%016x"`, rng.Uint64())
		}
		b.WriteByte(']')
	}
	b.WriteString(`]}]}`)
	_, err := run(t, r, GenerateExcel, b.String())
	wantArgError(t, err, GenerateExcel, "the workbook would be", "the limit is 1 MB", "split the data")
	if _, err := os.Stat(filepath.Join(r.dir, "workspaces", testTeam, "big.xlsx")); !os.IsNotExist(err) {
		t.Errorf("big.xlsx: %v", err)
	}
}

// pdfText extracts the text of a PDF as the search over the workspace reads it (PDFPages).
func pdfText(t *testing.T, data []byte) string {
	t.Helper()
	pages, err := PDFPages(data)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(pages, "")
}

func TestGeneratePDFReadsBack(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it") // the thread the tools share in (tools.Invocation.ThreadTS)
	// A chart first, to embed.
	mustRun(t, w.r, GenerateChart, `{"filename": "charts/signups", "type": "bar", "title": "Signups", "labels": ["W1", "W2", "W3"], "series": [{"name": "2026", "values": [40, 55, 61]}]}`)
	md := "# Quarterly report\n\nSignups grew **12%** over the quarter, *mostly* from `organic` search. See [the dashboard](https://example.com/d).\n\n" +
		"## Highlights\n\n- Zürich office opened\n- Ελληνικά: καλημέρα\n  1. nested first\n  2. nested second\n- Русский текст\n\n" +
		"1. First step\n2. Second step\n\n| Region | Amount |\n| --- | --- |\n| North | 10 |\n| Süd | 32 |\n\n" +
		"```\nSELECT count(*) FROM signups;\n```\n\n> A quote worth keeping.\n\n---\n\n![Signups by week](charts/signups.png)\n"
	out := mustRun(t, w.r, GeneratePDF, `{"filename": "reports/q3-report", "title": "Q3 Report – Übersicht", "markdown": `+jsonString(md)+`}`)
	wantOK(t, out, "Created reports/q3-report.pdf", "page(s)", "shared it in the thread")
	data := w.sharedFile(t, "q3-report.pdf")
	if !bytes.Equal(data, w.workspaceFile(t, "reports/q3-report.pdf")) {
		t.Error("the shared PDF differs from the workspace's")
	}
	text := strings.ReplaceAll(pdfText(t, data), " ", "")
	for _, want := range []string{"Q3Report–Übersicht", "Quarterlyreport", "Signupsgrew", "12%", "Highlights", "Zürichofficeopened",
		"Ελληνικά:καλημέρα", "nestedfirst", "Русскийтекст", "Firststep", "Region", "Amount", "Süd", "32", "SELECTcount(*)FROMsignups;",
		"Aquoteworthkeeping.", "(https://example.com/d)", "Signupsbyweek"} {
		if !strings.Contains(text, want) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, text)
		}
	}
	if !bytes.Contains(data, []byte("/Subtype /Image")) {
		t.Error("the chart image is not embedded")
	}
}

func TestGeneratePDFBadInput(t *testing.T) {
	r := newTestDocs(t, nil)
	_, err := run(t, r, GeneratePDF, `{"filename": "a.pdf", "markdown": "   "}`)
	wantArgError(t, err, GeneratePDF, "blank")
	_, err = run(t, r, GeneratePDF, `{"filename": "a.pdf", "markdown": ""}`)
	wantArgError(t, err, GeneratePDF, "markdown")
	_, err = run(t, r, GeneratePDF, `{"filename": "a.pdf"}`)
	wantArgError(t, err, GeneratePDF, `"markdown"`)
	_, err = run(t, r, GeneratePDF, `{"filename": "../a.pdf", "markdown": "x"}`)
	wantArgError(t, err, GeneratePDF, `uses ".."`)
	if entries, _ := os.ReadDir(filepath.Join(r.dir, "workspaces", testTeam)); len(entries) != 0 {
		t.Errorf("bad calls wrote %v", entries)
	}
	// An image that is missing, or not an image, or outside the workspace, is said in the document
	// and in the result, not fatal.
	if err := os.MkdirAll(filepath.Join(r.dir, "workspaces", testTeam), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "workspaces", testTeam, "notes.txt"), []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, r, GeneratePDF, `{"filename": "a.pdf", "markdown": "![x](nope.png) ![y](notes.txt) ![z](../../secret.png)"}`)
	wantOK(t, out, "Created a.pdf", "could not be included", "nope.png, notes.txt, ../../secret.png")
	text := pdfText(t, w(t, r, "a.pdf"))
	if !strings.Contains(strings.ReplaceAll(text, " ", ""), "[imagenope.pngcouldnotbeincluded]") {
		t.Errorf("the PDF does not say the image is missing:\n%s", text)
	}
}

// w reads a file of the test team's workspace.
func w(t *testing.T, r *testDocs, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "workspaces", testTeam, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Characters the fonts lack are replaced by a look-alike or left out, and the model hears which; tabs
// in code keep the code's indentation.
func TestGeneratePDFCharactersOutsideTheFonts(t *testing.T) {
	r := newTestDocs(t, nil)
	md := "# Status ✅\n\nDone 🚀 in 東京, Ελλάδα and Київ.\u200d\n\n```\nif x {\n\treturn\n}\n```\n"
	out := mustRun(t, r, GeneratePDF, `{"filename": "s.pdf", "markdown": `+jsonString(md)+`}`)
	wantOK(t, out, "Created s.pdf", "3 character(s) were left out", `'🚀', '東', '京'`)
	text := pdfText(t, w(t, r, "s.pdf"))
	for _, want := range []string{"Status √", "Done  in , Ελλάδα and Київ.", "    return"} {
		if !strings.Contains(text, want) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, text)
		}
	}
}

// A PDF made again from the same source (a retried call, a reset run, the model asking twice) is the
// file the workspace holds: not rewritten, not shared twice, and no approval asked, although the
// library gives different bytes each time and the clock moved. A different source, or a changed
// image, waits for approval.
func TestGeneratePDFRepeatAndReplace(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it")
	uploads := func() int { return w.srv.Calls("files.completeUploadExternal") }
	mustRun(t, w.r, GenerateChart, `{"filename": "c.png", "type": "bar", "labels": ["a", "b"], "series": [{"name": "", "values": [1, 2]}]}`)
	args := `{"filename": "r.pdf", "title": "Rapport", "markdown": "# Été\n\nΓειά σου, мир.\n\n![c](c.png)"}`
	wantOK(t, mustRun(t, w.r, GeneratePDF, args), "Created r.pdf")
	first := w.workspaceFile(t, "r.pdf")
	if n := uploads(); n != 2 {
		t.Fatalf("%d uploads, want 2", n)
	}
	w.r.now = func() time.Time { return time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) }
	wantOK(t, mustRun(t, w.r, GeneratePDF, args), "Found r.pdf already in the workspace with exactly this content",
		"already shared in the thread")
	if n := uploads(); n != 2 || !bytes.Equal(first, w.workspaceFile(t, "r.pdf")) {
		t.Errorf("the repeat rewrote or shared the PDF again (%d uploads)", n)
	}

	wantHeld(t, mustRun(t, w.r, GeneratePDF, strings.Replace(args, "мир", "мир!", 1)), "overwriting r.pdf")
	// The same Markdown with another chart under the same name is another document.
	other, err := drawChart(generateChartArgs{Type: "pie", Labels: []string{"a"}, Series: []chartSeries{{Values: []float64{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.r.dir, "workspaces", testTeam, "c.png"), other, 0o644); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, mustRun(t, w.r, GeneratePDF, args), "overwriting r.pdf")
	if !bytes.Equal(first, w.workspaceFile(t, "r.pdf")) {
		t.Error("a held PDF was written")
	}
}

func TestGenerateChartDecodes(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it") // the thread the tools share in (tools.Invocation.ThreadTS)
	for _, tt := range []struct{ name, args string }{
		{"bar", `{"filename": "bar.png", "type": "bar", "title": "Revenue", "x_title": "Quarter", "y_title": "EUR", "labels": ["Q1","Q2","Q3"], "series": [{"name": "2025", "values": [1,2,3]}, {"name": "2026", "values": [2,3,5]}]}`},
		{"line", `{"filename": "line", "type": "line", "labels": ["Mon","Tue","Wed","Thu"], "series": [{"name": "", "values": [10, 12, 9, 14]}]}`},
		{"pie", `{"filename": "pie.png", "type": "pie", "title": "Share", "labels": ["A","B","C"], "series": [{"name": "share", "values": [50, 30, 20]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRun(t, w.r, GenerateChart, tt.args)
			wantOK(t, out, tt.name+" chart", "shared it in the thread")
			name := tt.name + ".png"
			img, err := png.Decode(bytes.NewReader(w.sharedFile(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != chartWidth || b.Dy() != chartHeight {
				t.Errorf("size %v", b)
			}
			if colors := distinctColors(img); colors < 3 {
				t.Errorf("the chart is blank (%d colours)", colors)
			}
		})
	}
}

func distinctColors(img image.Image) int {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	return len(seen)
}

func TestGenerateChartBadInput(t *testing.T) {
	r := newTestDocs(t, nil)
	for _, tt := range []struct{ args, want string }{
		{`{"filename": "c.png", "type": "radar", "labels": ["a"], "series": [{"name": "", "values": [1]}]}`, "must be one of bar, line, pie"},
		{`{"filename": "c.png", "type": "bar", "labels": ["a","b"], "series": [{"name": "s", "values": [1]}]}`, "has 1 values for 2 labels"},
		{`{"filename": "c.png", "type": "pie", "labels": ["a"], "series": [{"name": "x", "values": [1]}, {"name": "y", "values": [2]}]}`, "exactly one series"},
		{`{"filename": "c.png", "type": "pie", "labels": ["a","b"], "series": [{"name": "x", "values": [1, -2]}]}`, "negative"},
		{`{"filename": "c.png", "type": "line", "labels": ["a"], "series": [{"name": "x", "values": ["one"]}]}`, "must be a number"},
		{`{"filename": "c.png", "type": "pie", "labels": ["a","b"], "series": [{"name": "x", "values": [0, 0]}]}`, "at least one value above zero"},
		{`{"filename": "c.png", "type": "bar", "labels": ["a","b"], "series": [{"name": "x", "values": [1, 2]}, {"name": "y", "values": [1, 2, 3]}]}`, `series 2 ("y") has 3 values for 2 labels`},
		{`{"filename": "c.png", "type": "bar", "labels": [], "series": [{"name": "x", "values": []}]}`, "at least 1"},
	} {
		_, err := run(t, r, GenerateChart, tt.args)
		wantArgError(t, err, GenerateChart, tt.want)
	}
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The largest chart the limits allow draws, negative bars too. (A zigzag of 12 x 1,000 points, the
// worst case for the rasterizer, takes about 2 s without the race detector and 30 s with it, so the
// data here is a noisy trend, as real series are.)
func TestGenerateChartLimits(t *testing.T) {
	labels := make([]string, MaxChartPoints)
	series := make([]chartSeries, MaxChartSeries)
	for i := range labels {
		labels[i] = fmt.Sprintf("day %d", i+1)
	}
	for s := range series {
		series[s].Name = fmt.Sprintf("metric %d", s+1)
		series[s].Values = make([]float64, len(labels))
		for i := range labels {
			series[s].Values[i] = float64(i)/20*float64(s+1) + 8*math.Sin(float64(i)/15) - 20
		}
	}
	for _, typ := range []string{"line", "bar"} {
		data, err := drawChart(generateChartArgs{Type: typ, Title: "All", XTitle: "Day", YTitle: "Value", Labels: labels, Series: series})
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if colors := distinctColors(img); colors < 3 {
			t.Errorf("%s: the chart is blank (%d colours)", typ, colors)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{58.5: 100, 0.3: 0.5, 7: 10, 1: 1, 1.2: 2, 2.2: 2.5, 31: 50, 1234: 2000} {
		if got := niceStep(raw); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}

func TestGenerateCSV(t *testing.T) {
	w := newSlackWorkspace(t)
	root := w.say(t, "CLOCAL", "can I get the signups as a CSV?")
	inv := tools.Invocation{
		Name: tools.GenerateCSV, Team: testTeam, Channel: "CLOCAL", ThreadTS: root, RunID: "run-1", CallID: "call_9",
		Arguments: `{"filename": "exports/signups", "rows": [["Date", "Signups", "Note"], ["2026-04-01", "12", "launch, day 1"], ["2026-04-02", "7", "said \"wow\""]]}`,
	}
	out, err := w.r.Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, out, "Created exports/signups.csv (3 rows, 3 columns", "shared it in the thread (Slack file F")
	if len(out.Artifacts) != 1 || out.Artifacts[0] != "exports/signups.csv" {
		t.Errorf("artifacts = %v", out.Artifacts)
	}

	wantCSV := "Date,Signups,Note\r\n2026-04-01,12,\"launch, day 1\"\r\n2026-04-02,7,\"said \"\"wow\"\"\"\r\n"
	// In the workspace...
	read := mustRun(t, w.r, tools.ReadFile, `{"path": "exports/signups.csv"}`)
	if read.Content != wantCSV {
		t.Errorf("workspace file = %q, want %q", read.Content, wantCSV)
	}
	// ...and shared in the thread with the files v2 upload.
	if n := w.srv.Calls("files.getUploadURLExternal"); n != 1 {
		t.Errorf("files.getUploadURLExternal called %d times", n)
	}
	if n := w.srv.Calls("files.completeUploadExternal"); n != 1 {
		t.Errorf("files.completeUploadExternal called %d times", n)
	}
	var shared *localslack.File
	for _, m := range w.srv.Messages("CLOCAL", root) {
		for _, f := range m.Files {
			shared = &f
		}
	}
	if shared == nil {
		t.Fatalf("no file shared in the thread: %+v", w.srv.Messages("CLOCAL", root))
	}
	f, ok := w.srv.File(shared.ID)
	if !ok || !f.Uploaded || string(f.Content) != wantCSV || f.Name != "signups.csv" || f.Channel != "CLOCAL" || f.ThreadTS != root {
		t.Errorf("uploaded file = %+v (content %q)", f, f.Content)
	}
}

func TestGenerateCSVUploadFails(t *testing.T) {
	w := newSlackWorkspace(t)
	w.srv.FailNext("files.completeUploadExternal", localslack.Failure{SlackError: "not_in_channel"})
	out := mustRun(t, w.r, tools.GenerateCSV, `{"filename": "a.csv", "rows": [["x"]]}`)
	wantToolError(t, out, "Created a.csv", "could not share it in the thread", "/invite @Lucy")
	if len(out.Artifacts) != 1 {
		t.Errorf("artifacts = %v: the file was written", out.Artifacts)
	}
	wantOK(t, mustRun(t, w.r, tools.ReadFile, `{"path": "a.csv"}`), "x")

	w.srv.FailNext(localslack.MethodUpload, localslack.Failure{Status: 503})
	_, err := run(t, w.r, tools.GenerateCSV, `{"filename": "b.csv", "rows": [["y"]]}`)
	te := wantTransient(t, err)
	wantContains(t, te.Error(), "b.csv was saved in the workspace")

	// Without a conversation the file is only saved.
	out, err = w.r.Run(t.Context(), tools.Invocation{Name: tools.GenerateCSV, Team: testTeam, Arguments: `{"filename": "c.csv", "rows": [["z"]]}`})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, out, "Created c.csv", "no Slack conversation to share it in")
}

// A CSV that would replace a file with different rows waits for approval and shares nothing;
// the same rows again are shared without a write.
func TestGenerateCSVOverwriteNeedsApproval(t *testing.T) {
	w := newSlackWorkspace(t)
	root := w.say(t, "CLOCAL", "export the signups")
	call := func(rows string, approved bool, guard string) tools.Output {
		t.Helper()
		out, err := w.r.Run(t.Context(), tools.Invocation{
			Name: tools.GenerateCSV, Team: testTeam, Channel: "CLOCAL", ThreadTS: root, RunID: "run-1", CallID: "call_1",
			Arguments: `{"filename": "signups.csv", "rows": ` + rows + `}`, Approved: approved, Guard: guard,
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	uploads := func() int { return w.srv.Calls("files.completeUploadExternal") }

	wantOK(t, call(`[["day","n"],["mon","1"]]`, false, ""), "Created signups.csv")
	// The same rows again (a repeated call, or a run an operator Reset): the file is already in the
	// thread, so it is not shared a second time.
	wantOK(t, call(`[["day","n"],["mon","1"]]`, false, ""), "Found signups.csv already in the workspace with exactly these rows",
		"it is already shared in the thread (Slack file F")
	if n := uploads(); n != 1 {
		t.Errorf("%d uploads, want 1", n)
	}

	need := wantHeld(t, call(`[["day","n"],["tue","2"]]`, false, ""), "overwriting signups.csv")
	wantContains(t, need.Summary, "I'd like to overwrite `signups.csv`")
	wantContains(t, need.Details, "- mon,1", "+ tue,2")
	if n := uploads(); n != 1 {
		t.Errorf("a held CSV was shared (%d uploads)", n)
	}
	wantOK(t, mustRun(t, w.r, tools.ReadFile, `{"path": "signups.csv"}`), "mon,1")

	wantOK(t, call(`[["day","n"],["tue","2"]]`, true, need.Guard), "Wrote signups.csv", "as approved", "shared it in the thread")
	wantOK(t, mustRun(t, w.r, tools.ReadFile, `{"path": "signups.csv"}`), "tue,2")
	if n := uploads(); n != 2 {
		t.Errorf("%d uploads, want 2", n)
	}
}
