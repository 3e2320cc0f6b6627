package tools

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ledongthuc/pdf"
	"github.com/xuri/excelize/v2"

	"github.com/lucy-agent/lucy/localslack"
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
	b, err := os.ReadFile(filepath.Join(w.r.deps.DataDir, "workspaces", testTeam, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGenerateExcelReadsBack(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it") // the thread the tools share in (Invocation.ThreadTS)
	out := mustRun(t, w.r, GenerateExcel, `{"filename": "reports/q3", "sheets": [
		{"name": "Summary", "rows": [["Metric", "Value"], ["Signups", 1250], ["Churned", 31.5], ["Active", true], ["Total", "=B2+B3"], ["Note", null]]},
		{"name": "Détails – Q3", "rows": [["Date", "Region", "Amount"], ["2026-07-01", "Zürich", 10], ["2026-07-02T14:30:00Z", "Москва", 32]]}
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
		if formula, _ := f.GetCellFormula("Summary", "B5"); formula != "B2+B3" {
			t.Errorf("formula %q", formula)
		}
		style, _ := f.GetCellStyle("Summary", "A1")
		if st, err := f.GetStyle(style); err != nil || st.Font == nil || !st.Font.Bold {
			t.Errorf("header not bold: %+v %v", st, err)
		}
		if panes, err := f.GetPanes("Summary"); err != nil || !panes.Freeze || panes.YSplit != 1 {
			t.Errorf("header not frozen: %+v %v", panes, err)
		}
	}
}

func TestGenerateExcelBadInput(t *testing.T) {
	r := newTestRegistry(t, Deps{})
	for _, tt := range []struct{ args, want string }{
		{`{"filename": "a.xlsx", "sheets": [{"name": "Q3/Q4", "rows": [["a"]]}]}`, "may not contain"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "` + strings.Repeat("x", 32) + `", "rows": [["a"]]}]}`, "too long"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [["a"]]}, {"name": "a", "rows": [["b"]]}]}`, "two sheets are named"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [[{"x": 1}]]}]}`, "must be one of: string, number, boolean, null"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A"}]}`, `missing the field "rows"`},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [["a"]], "color": "red"}]}`, "fields it does not take"},
		{`{"filename": "a.xlsx", "sheets": [{"name": "A", "rows": [` + strings.Repeat(`["a","b","c","d","e","f","g","h","i","j"],`, 20_000) + `["x"]]}]}`, "the limit is 200000"},
	} {
		_, err := run(t, r, GenerateExcel, tt.args)
		wantArgError(t, err, GenerateExcel, tt.want)
	}
}

// pdfText extracts the text of a PDF: each page's content stream, its text-showing operators decoded
// through the ToUnicode CMap of the font in use, as a PDF viewer's copy-and-paste does. (The reader
// library's own text extraction gets 16-bit bfrange mappings wrong, so only its object parsing is
// used.)
func pdfText(t *testing.T, data []byte) string {
	t.Helper()
	rd, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; i <= rd.NumPage(); i++ {
		page := rd.Page(i)
		fonts := page.V.Key("Resources").Key("Font")
		cmaps := map[string]map[uint16]rune{}
		for _, name := range fonts.Keys() {
			cmaps[name] = readCMap(t, fonts.Key(name).Key("ToUnicode"))
		}
		var content bytes.Buffer
		c := page.V.Key("Contents")
		if c.Kind() == pdf.Array {
			for k := 0; k < c.Len(); k++ {
				readAll(t, &content, c.Index(k))
			}
		} else {
			readAll(t, &content, c)
		}
		showText(&b, content.String(), cmaps)
	}
	return b.String()
}

func readAll(t *testing.T, dst *bytes.Buffer, v pdf.Value) {
	rc := v.Reader()
	defer rc.Close()
	if _, err := dst.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
}

var (
	bfrangeRE = regexp.MustCompile(`<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>`)
	bfcharRE  = regexp.MustCompile(`<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>`)
)

// readCMap reads the bfrange and bfchar entries of a ToUnicode CMap (2-byte codes, BMP targets).
func readCMap(t *testing.T, v pdf.Value) map[uint16]rune {
	m := map[uint16]rune{}
	if v.IsNull() {
		return m
	}
	var buf bytes.Buffer
	readAll(t, &buf, v)
	s := buf.String()
	hex := func(h string) uint64 { n, _ := strconv.ParseUint(h, 16, 32); return n }
	for _, sec := range strings.Split(s, "beginbfrange")[1:] {
		sec, _, _ = strings.Cut(sec, "endbfrange")
		for _, r := range bfrangeRE.FindAllStringSubmatch(sec, -1) {
			lo, hi, dst := hex(r[1]), hex(r[2]), hex(r[3])
			for c := lo; c <= hi; c++ {
				m[uint16(c)] = rune(dst + c - lo)
			}
		}
	}
	for _, sec := range strings.Split(s, "beginbfchar")[1:] {
		sec, _, _ = strings.Cut(sec, "endbfchar")
		for _, r := range bfcharRE.FindAllStringSubmatch(sec, -1) {
			m[uint16(hex(r[1]))] = rune(hex(r[2]))
		}
	}
	return m
}

// showText appends the text that a content stream shows: strings (literal or hex, 2-byte codes) in
// the font selected by the last Tf, a space after each show operator, a line break at ET.
func showText(b *strings.Builder, content string, cmaps map[string]map[uint16]rune) {
	var cm map[uint16]rune
	var lastName string
	emit := func(codes []byte) {
		for k := 0; k+1 < len(codes); k += 2 {
			if r, ok := cm[uint16(codes[k])<<8|uint16(codes[k+1])]; ok {
				b.WriteRune(r)
			}
		}
	}
	for i := 0; i < len(content); i++ {
		switch c := content[i]; {
		case c == '(':
			var str []byte
			depth := 1
			for i++; i < len(content) && depth > 0; i++ {
				ch := content[i]
				switch {
				case ch == '\\' && i+1 < len(content):
					i++
					switch e := content[i]; e {
					case 'n':
						str = append(str, '\n')
					case 'r':
						str = append(str, '\r')
					case 't':
						str = append(str, '\t')
					case 'b':
						str = append(str, '\b')
					case 'f':
						str = append(str, '\f')
					default:
						if e >= '0' && e <= '7' {
							n, k := 0, 0
							for ; k < 3 && i+k < len(content) && content[i+k] >= '0' && content[i+k] <= '7'; k++ {
								n = n*8 + int(content[i+k]-'0')
							}
							i += k - 1
							str = append(str, byte(n))
						} else {
							str = append(str, e)
						}
					}
				case ch == '(':
					depth++
					str = append(str, ch)
				case ch == ')':
					depth--
					if depth > 0 {
						str = append(str, ch)
					}
				default:
					str = append(str, ch)
				}
			}
			i--
			emit(str)
		case c == '<' && i+1 < len(content) && content[i+1] != '<':
			end := strings.IndexByte(content[i:], '>')
			if end < 0 {
				return
			}
			raw, _ := hexDecode(content[i+1 : i+end])
			emit(raw)
			i += end
		case c == '/':
			k := i + 1
			for k < len(content) && !strings.ContainsRune(" \n\r\t/[]<>()", rune(content[k])) {
				k++
			}
			lastName = content[i+1 : k]
			i = k - 1
		case strings.HasPrefix(content[i:], "Tf"):
			cm = cmaps[lastName]
			i++
		case strings.HasPrefix(content[i:], "ET"):
			b.WriteString("\n")
			i++
		case strings.HasPrefix(content[i:], "Tj") || strings.HasPrefix(content[i:], "TJ"):
			b.WriteString(" ")
			i++
		}
	}
}

func hexDecode(h string) ([]byte, error) {
	h = strings.Join(strings.Fields(h), "")
	if len(h)%2 == 1 {
		h += "0"
	}
	out := make([]byte, len(h)/2)
	for k := range out {
		n, err := strconv.ParseUint(h[2*k:2*k+2], 16, 8)
		if err != nil {
			return nil, err
		}
		out[k] = byte(n)
	}
	return out, nil
}

func TestGeneratePDFReadsBack(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it") // the thread the tools share in (Invocation.ThreadTS)
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
	r := newTestRegistry(t, Deps{})
	_, err := run(t, r, GeneratePDF, `{"filename": "a.pdf", "markdown": "   "}`)
	wantArgError(t, err, GeneratePDF, "blank")
	_, err = run(t, r, GeneratePDF, `{"filename": "../a.pdf", "markdown": "x"}`)
	wantArgError(t, err, GeneratePDF, `uses ".."`)
	// A missing image is said in the document, not fatal.
	out := mustRun(t, r, GeneratePDF, `{"filename": "a.pdf", "markdown": "![x](nope.png)"}`)
	wantOK(t, out, "Created a.pdf")
}

func TestGenerateChartDecodes(t *testing.T) {
	w := newSlackWorkspace(t)
	w.say(t, "CLOCAL", "please make it") // the thread the tools share in (Invocation.ThreadTS)
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
	r := newTestRegistry(t, Deps{})
	for _, tt := range []struct{ args, want string }{
		{`{"filename": "c.png", "type": "radar", "labels": ["a"], "series": [{"name": "", "values": [1]}]}`, "must be one of bar, line, pie"},
		{`{"filename": "c.png", "type": "bar", "labels": ["a","b"], "series": [{"name": "s", "values": [1]}]}`, "has 1 values for 2 labels"},
		{`{"filename": "c.png", "type": "pie", "labels": ["a"], "series": [{"name": "x", "values": [1]}, {"name": "y", "values": [2]}]}`, "exactly one series"},
		{`{"filename": "c.png", "type": "pie", "labels": ["a","b"], "series": [{"name": "x", "values": [1, -2]}]}`, "negative"},
		{`{"filename": "c.png", "type": "line", "labels": ["a"], "series": [{"name": "x", "values": ["one"]}]}`, "must be a number"},
	} {
		_, err := run(t, r, GenerateChart, tt.args)
		wantArgError(t, err, GenerateChart, tt.want)
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
