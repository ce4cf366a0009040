package metadata

import (
	"errors"
	"reflect"
	"testing"
)

func TestClientQuotaApply(t *testing.T) {
	alice := []QuotaEntityPart{{Type: QuotaEntityUser, Name: ptr("alice")}}
	aliceApp := []QuotaEntityPart{{Type: QuotaEntityUser, Name: ptr("alice")}, {Type: QuotaEntityClientID, Name: nil}}
	im := Empty("c")
	im1, err := im.Apply(
		ClientQuota{Entity: alice, Key: QuotaProducerByteRate, Value: 1024},
		ClientQuota{Entity: aliceApp, Key: QuotaConsumerByteRate, Value: 2048},
	)
	if err != nil {
		t.Fatal(err)
	}
	if im.HasClientQuotas() {
		t.Fatal("the old image changed")
	}
	got := im1.ClientQuotas()
	want := []QuotaEntry{
		{Entity: QuotaEntity{User: QuotaName{Set: true, Name: "alice"}}, Values: map[string]float64{QuotaProducerByteRate: 1024}},
		{Entity: QuotaEntity{User: QuotaName{Set: true, Name: "alice"}, ClientID: QuotaName{Set: true, Default: true}}, Values: map[string]float64{QuotaConsumerByteRate: 2048}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("quotas = %+v, want %+v", got, want)
	}
	im2, err := im1.Apply(ClientQuota{Entity: alice, Key: QuotaProducerByteRate, Remove: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := im2.ClientQuota(want[0].Entity); ok {
		t.Fatal("an entity whose last value was removed is still listed")
	}
	if v, _ := im1.ClientQuota(want[0].Entity); v[QuotaProducerByteRate] != 1024 {
		t.Fatal("removing on the new image changed the old one")
	}
	// A snapshot's records rebuild the same quotas.
	rebuilt, err := Empty("c").Apply(ImageRecords(im1)...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt.ClientQuotas(), want) {
		t.Fatalf("rebuilt quotas = %+v", rebuilt.ClientQuotas())
	}
}

func TestClientQuotaApplyRejects(t *testing.T) {
	for name, r := range map[string]ClientQuota{
		"empty entity": {Key: QuotaProducerByteRate, Value: 1},
		"unknown type": {Entity: []QuotaEntityPart{{Type: "ip", Name: ptr("1.2.3.4")}}, Key: "connection_creation_rate", Value: 1},
		"type twice":   {Entity: []QuotaEntityPart{{Type: QuotaEntityUser}, {Type: QuotaEntityUser, Name: ptr("a")}}, Key: QuotaProducerByteRate, Value: 1},
		"empty key":    {Entity: []QuotaEntityPart{{Type: QuotaEntityUser}}, Value: 1},
	} {
		if _, err := Empty("c").Apply(r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: err = %v, want ErrInvalidRecord", name, err)
		}
	}
}

func TestClientQuotaRoundTrip(t *testing.T) {
	r := ClientQuota{Entity: []QuotaEntityPart{{Type: QuotaEntityUser}, {Type: QuotaEntityClientID, Name: ptr("")}}, Key: QuotaRequestPercentage, Value: 12.5}
	b, err := EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("decoded %+v, want %+v (the default user must stay apart from an empty client id)", got, r)
	}
}
