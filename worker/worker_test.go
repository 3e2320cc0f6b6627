package worker

import (
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/config"
)

// The activities decode history with the converter the client was dialled with: a codec on the
// client reaches them through Deps.
func TestNewActivitiesUsesTheClientsDataConverter(t *testing.T) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}))
	acts := NewActivities(Deps{Config: &config.Config{DataDir: t.TempDir()}, Log: zerolog.Nop(), DataConverter: dc})
	if acts.DataConverter != dc {
		t.Errorf("activities use %T, want the client's converter", acts.DataConverter)
	}
}

// Lucy's converter is the SDK default for now: histories written before it existed stay readable.
func TestDataConverterReadsDefaultPayloads(t *testing.T) {
	p, err := converter.GetDefaultDataConverter().ToPayloads(map[string]string{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := DataConverter().FromPayloads(p, &got); err != nil || got["text"] != "hello" {
		t.Errorf("decoded %v, %v", got, err)
	}
}
