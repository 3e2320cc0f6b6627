package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the configuration table in docs/operating.md from Docs")

const operatingDoc = "../docs/operating.md"

// The configuration table in docs/operating.md is Table(), byte for byte, between its markers: a
// variable added to Variables needs a row in Docs (TestDocsCoverVariables), and the row reaches the
// operators' page only through -update, so the page and the code cannot drift apart.
func TestConfigurationTable(t *testing.T) {
	data, err := os.ReadFile(operatingDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin := strings.Index(doc, ConfigurationTableBegin)
	end := strings.Index(doc, ConfigurationTableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the markers %q and %q around the configuration table", operatingDoc, ConfigurationTableBegin, ConfigurationTableEnd)
	}
	begin += len(ConfigurationTableBegin)
	want := "\n\n" + Table() + "\n"
	if got := doc[begin:end]; got != want {
		if *update {
			if err := os.WriteFile(operatingDoc, []byte(doc[:begin]+want+doc[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the configuration table in %s differs from config.Docs: run go test ./config -run TestConfigurationTable -update and read the diff", operatingDoc)
	}
}

// Every variable Load reads has exactly one row, and every row names only what some package reads.
func TestDocsCoverVariables(t *testing.T) {
	missing, extra := docProblems()
	for _, v := range missing {
		t.Errorf("%s is in Variables but no row of config.Docs documents it", v)
	}
	for _, v := range extra {
		t.Errorf("%s is documented twice in config.Docs, or no package reads it", v)
	}
	for _, d := range Docs {
		if len(d.Names) == 0 || strings.TrimSpace(d.Meaning) == "" || strings.TrimSpace(d.Default) == "" {
			t.Errorf("row %v lacks names, a meaning or a default", d.Names)
		}
		if strings.Contains(d.Meaning+d.Default+d.Label, "\n") {
			t.Errorf("row %v: a table cell cannot hold a line break", d.Names)
		}
	}
}
