package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

func key(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }

func TestRoundTripAndRotation(t *testing.T) {
	k1, err := ParseKeys("k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	dc1, _ := DataConverter(k1)
	p, err := dc1.ToPayload(map[string]string{"text": "the launch moved to Thursday"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.GetData(), []byte("Thursday")) || string(p.GetMetadata()[MetadataKeyID]) != "k1" {
		t.Fatalf("not encrypted: %v", p)
	}
	// Rotation: k2 seals new payloads, k1 still opens old ones.
	k21, err := ParseKeys("k2:" + key(2) + ", k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	dc21, _ := DataConverter(k21)
	var got map[string]string
	if err := dc21.FromPayload(p, &got); err != nil || got["text"] != "the launch moved to Thursday" {
		t.Fatalf("old payload after rotation: %v %v", got, err)
	}
	p2, _ := dc21.ToPayload("new")
	if string(p2.GetMetadata()[MetadataKeyID]) != "k2" {
		t.Errorf("new payload sealed with %q", p2.GetMetadata()[MetadataKeyID])
	}
	// A key dropped too early: a clear error, not garbage.
	if err := dc1.FromPayload(p2, new(string)); err == nil || !strings.Contains(err.Error(), `key "k2"`) {
		t.Errorf("unknown key: %v", err)
	}
	// Tampering is detected.
	bad := &commonpb.Payload{Metadata: p.GetMetadata(), Data: append([]byte(nil), p.GetData()...)}
	bad.Data[len(bad.Data)-1] ^= 1
	if err := dc1.FromPayload(bad, &got); err == nil {
		t.Error("a tampered payload opened")
	}
	// Relabelled to another key ID: refused (the ID is authenticated).
	relabelled := &commonpb.Payload{Metadata: map[string][]byte{MetadataEncoding: []byte(EncodingName), MetadataKeyID: []byte("k2")}, Data: p.GetData()}
	if err := dc21.FromPayload(relabelled, &got); err == nil {
		t.Error("a relabelled payload opened")
	}
	// Payloads from before encryption pass through.
	plain, _ := converter.GetDefaultDataConverter().ToPayload("old and clear")
	var s string
	if err := dc1.FromPayload(plain, &s); err != nil || s != "old and clear" {
		t.Errorf("plain payload: %q %v", s, err)
	}
}

func TestParseKeysErrors(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"nokeyid", "is not id:base64key"},
		{"k1:" + base64.StdEncoding.EncodeToString([]byte("short")), "not 32 bytes"},
		{"k1:" + key(1) + ",k1:" + key(2), "listed twice"},
		{"bad id:" + key(1), "is not id:base64key"},
	} {
		if _, err := ParseKeys(tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.spec, err, tt.want)
		}
		if _, err := ParseKeys(tt.spec); err != nil && strings.Contains(err.Error(), key(1)) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	if keys, err := ParseKeys(""); err != nil || len(keys) != 0 {
		t.Errorf("empty: %v %v", keys, err)
	}
}

// The Web UI's codec protocol: POST /decode with {"payloads": [...]}, CORS for the UI's origin only.
func TestHandlerDecodesForTheWebUI(t *testing.T) {
	keys, _ := ParseKeys("k1:" + key(1))
	dc, _ := DataConverter(keys)
	p, _ := dc.ToPayload("secret text")
	h, err := Handler(keys, nil, "http://127.0.0.1:8233")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/codec", h))
	defer srv.Close()
	body, _ := json.Marshal(map[string]any{"payloads": []any{json.RawMessage(mustProtoJSON(t, p))}})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/codec/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://127.0.0.1:8233")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Payloads []struct {
			Data string `json:"data"`
		} `json:"payloads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Payloads) != 1 {
		t.Fatalf("status %d, %v, %+v", resp.StatusCode, err, out)
	}
	data, _ := base64.StdEncoding.DecodeString(out.Payloads[0].Data)
	if string(data) != `"secret text"` {
		t.Errorf("decoded %q", data)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:8233" {
		t.Errorf("CORS for the UI: %q", resp.Header.Get("Access-Control-Allow-Origin"))
	}
	req, _ = http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("CORS granted to another origin: %q", got)
	}
}

func mustProtoJSON(t *testing.T, p *commonpb.Payload) []byte {
	t.Helper()
	b, err := protojson.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
