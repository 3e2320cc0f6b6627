package documents

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
	"github.com/xuri/excelize/v2"
)

// The reading side of the documents: the text of a workspace file, in passages that each say where
// they are (a PDF's page, a sheet's row, a text's lines), for the search over a team's files
// (package filesearch). It lives here, beside the writers, because it needs the same libraries
// (excelize for workbooks, the PDF reader the tests already read generated PDFs with).

// Passage is a piece of a document's text and where it is.
type Passage struct {
	Where string // "page 40", "sheet Budget, row 12", "lines 41-60", "paragraph 3", "row 7"
	Text  string
}

// Extraction limits: a document's text is read up to these, the rest left out of its passages.
const (
	MaxExtractBytes = 8 << 20 // text taken from one document
	maxPassages     = 20_000  // passages of one document (rows of a big sheet)
	linesPerPassage = 20      // a text file's passage: this many lines…
	passageChars    = 1500    // …or about this many characters
)

// ErrNotText is the error of a file that holds no text to read (an image, a binary).
var ErrNotText = errors.New("not a document with text")

// Extract returns the passages of the file named name (by its extension: .pdf, .docx, .xlsx, .csv;
// any other UTF-8 file as lines of text). A file that is neither gives ErrNotText.
func Extract(name string, data []byte) (ps []Passage, err error) {
	// The readers parse what anyone may have uploaded; a malformed file must not take the worker down.
	defer func() {
		if r := recover(); r != nil {
			ps, err = nil, fmt.Errorf("%s: unreadable: %v", name, r)
		}
	}()
	switch strings.ToLower(path.Ext(name)) {
	case ".pdf":
		return pdfPassages(data)
	case ".docx":
		return docxPassages(data)
	case ".xlsx", ".xlsm":
		return xlsxPassages(data)
	case ".csv":
		return csvPassages(data)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, ErrNotText
	}
	return linePassages(string(data)), nil
}

// budget keeps the passages of one document within the extraction limits.
type budget struct {
	out   []Passage
	bytes int
}

func (b *budget) add(where, text string) bool {
	text = strings.TrimSpace(text)
	if text == "" {
		return true
	}
	if len(b.out) >= maxPassages || b.bytes+len(text) > MaxExtractBytes {
		return false
	}
	b.out = append(b.out, Passage{Where: where, Text: text})
	b.bytes += len(text)
	return true
}

// linePassages cuts a text into passages of linesPerPassage lines (fewer when they are long), each
// named by its lines.
func linePassages(text string) []Passage {
	var b budget
	lines := strings.Split(text, "\n")
	for start := 0; start < len(lines); {
		end, n := start, 0
		for end < len(lines) && end-start < linesPerPassage && (n == 0 || n+len(lines[end]) <= passageChars) {
			n += len(lines[end]) + 1
			end++
		}
		where := fmt.Sprintf("line %d", start+1)
		if end-start > 1 {
			where = fmt.Sprintf("lines %d-%d", start+1, end)
		}
		if !b.add(where, strings.Join(lines[start:end], "\n")) {
			break
		}
		start = end
	}
	return b.out
}

// csvPassages makes a passage of each row (RFC 4180 through encoding/csv, ragged rows allowed); a
// file that is not valid CSV is read as lines.
func csvPassages(data []byte) ([]Passage, error) {
	if !utf8.Valid(data) {
		return nil, ErrNotText
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var b budget
	for row := 1; ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			return b.out, nil
		}
		if err != nil {
			return linePassages(string(data)), nil
		}
		if !b.add(fmt.Sprintf("row %d", row), strings.Join(rec, " | ")) {
			return b.out, nil
		}
	}
}

// xlsxPassages makes a passage of each row of each sheet, its cells as Excel shows them.
func xlsxPassages(data []byte) ([]Passage, error) {
	f, err := excelize.OpenReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a readable workbook: %w", err)
	}
	defer f.Close()
	var b budget
	for _, sheet := range f.GetSheetList() {
		rows, err := f.Rows(sheet)
		if err != nil {
			return nil, err
		}
		for n := 1; rows.Next(); n++ {
			cells, err := rows.Columns()
			if err != nil {
				rows.Close()
				return nil, err
			}
			if !b.add(fmt.Sprintf("sheet %s, row %d", sheet, n), strings.Join(cells, " | ")) {
				rows.Close()
				return b.out, nil
			}
		}
		rows.Close()
	}
	return b.out, nil
}

// docxPassages reads word/document.xml of a Word document (ECMA-376 Part 1, WordprocessingML): the
// text runs (w:t) of each paragraph (w:p), tabs (w:tab) and breaks (w:br, w:cr) as white space.
// Short paragraphs are joined into passages of about passageChars, each named by its paragraphs'
// numbers (empty paragraphs counted, as a word processor numbers them).
func docxPassages(data []byte) ([]Passage, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a readable Word document: %w", err)
	}
	var doc *zip.File
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			doc = f
		}
	}
	if doc == nil {
		return nil, errors.New("not a Word document: it has no word/document.xml")
	}
	rc, err := doc.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Bounded: a small archive may inflate to far more (a zip bomb).
	dec := xml.NewDecoder(io.LimitReader(rc, 4*MaxExtractBytes))
	var b budget
	var para, chunk strings.Builder
	n, first, last := 0, 0, 0
	inText := false
	flush := func() bool {
		where := fmt.Sprintf("paragraph %d", first)
		if last > first {
			where = fmt.Sprintf("paragraphs %d-%d", first, last)
		}
		ok := b.add(where, chunk.String())
		chunk.Reset()
		return ok
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a readable Word document: %w", err)
		}
		const w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != w {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br", "cr":
				para.WriteByte('\n')
			}
		case xml.EndElement:
			if t.Name.Space != w {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				n++
				text := strings.TrimSpace(para.String())
				para.Reset()
				if text == "" {
					continue
				}
				if chunk.Len() > 0 && chunk.Len()+len(text) > passageChars {
					if !flush() {
						return b.out, nil
					}
				}
				if chunk.Len() == 0 {
					first = n
				} else {
					chunk.WriteByte('\n')
				}
				chunk.WriteString(text)
				last = n
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
	if chunk.Len() > 0 {
		flush()
	}
	return b.out, nil
}

// pdfPassages makes a passage of each page. A page's text is its content stream's text-showing
// operators decoded through the ToUnicode CMap of the font in use, as a PDF viewer's copy-and-paste
// does (the reader library's own extraction gets 16-bit bfrange mappings wrong, so only its object
// parsing is used); a page whose fonts have no such map (simple 8-bit fonts) falls back on the
// library's extraction.
func pdfPassages(data []byte) ([]Passage, error) {
	pages, err := PDFPages(data)
	if err != nil {
		return nil, err
	}
	var b budget
	for i, text := range pages {
		if !b.add("page "+strconv.Itoa(i+1), text) {
			break
		}
	}
	return b.out, nil
}

// PDFPages returns the text of each page of a PDF, in order.
func PDFPages(data []byte) ([]string, error) {
	rd, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a readable PDF: %w", err)
	}
	out := make([]string, 0, rd.NumPage())
	for i := 1; i <= rd.NumPage(); i++ {
		page := rd.Page(i)
		fonts := page.V.Key("Resources").Key("Font")
		cmaps := map[string]map[uint16]rune{}
		for _, name := range fonts.Keys() {
			m, err := readCMap(fonts.Key(name).Key("ToUnicode"))
			if err != nil {
				return nil, err
			}
			cmaps[name] = m
		}
		var content bytes.Buffer
		c := page.V.Key("Contents")
		if c.Kind() == pdf.Array {
			for k := 0; k < c.Len(); k++ {
				if err := readAll(&content, c.Index(k)); err != nil {
					return nil, err
				}
			}
		} else if err := readAll(&content, c); err != nil {
			return nil, err
		}
		var b strings.Builder
		showText(&b, content.String(), cmaps)
		text := b.String()
		if strings.IndexFunc(text, unicode.IsLetter) < 0 && strings.IndexFunc(text, unicode.IsDigit) < 0 {
			if plain, err := page.GetPlainText(nil); err == nil {
				text = plain
			}
		}
		out = append(out, text)
	}
	return out, nil
}

func readAll(dst *bytes.Buffer, v pdf.Value) error {
	if v.IsNull() {
		return nil
	}
	rc := v.Reader()
	defer rc.Close()
	_, err := dst.ReadFrom(io.LimitReader(rc, 4*MaxExtractBytes))
	return err
}

var (
	bfrangeRE = regexp.MustCompile(`<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>`)
	bfcharRE  = regexp.MustCompile(`<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>`)
)

// readCMap reads the bfrange and bfchar entries of a ToUnicode CMap (2-byte codes, BMP targets).
func readCMap(v pdf.Value) (map[uint16]rune, error) {
	m := map[uint16]rune{}
	if v.IsNull() {
		return m, nil
	}
	var buf bytes.Buffer
	if err := readAll(&buf, v); err != nil {
		return nil, err
	}
	s := buf.String()
	hex := func(h string) uint64 { n, _ := strconv.ParseUint(h, 16, 32); return n }
	for _, sec := range strings.Split(s, "beginbfrange")[1:] {
		sec, _, _ = strings.Cut(sec, "endbfrange")
		for _, r := range bfrangeRE.FindAllStringSubmatch(sec, -1) {
			lo, hi, dst := hex(r[1]), hex(r[2]), hex(r[3])
			if hi < lo || hi-lo > 0xFFFF {
				continue
			}
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
	return m, nil
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
