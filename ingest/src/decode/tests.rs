use std::sync::Arc;

use svc_engine::props::ValueRef;
use svc_engine::{Crn, Graph, Relation};

use super::*;

fn node(crn: &str, props: &str, cost: f64) -> pb::Node {
    pb::Node {
        crn: crn.into(),
        properties: props.as_bytes().to_vec(),
        cost,
    }
}

fn edge(a: &str, b: &str, rel: &str) -> pb::Edge {
    pb::Edge {
        source_crn: a.into(),
        target_crn: b.into(),
        relation: rel.into(),
    }
}

const VOL: &str = "crn:svc:aws:us-east-1:123456789012:volume:vol-1";
const VM: &str = "crn:svc:aws:us-east-1:123456789012:instance:i-1";
const SUBNET: &str = "crn:svc:aws:us-east-1:ec2:subnet:123456789012:subnet-1";

fn ingest(resp: &pb::ScanResponse) -> (Graph, DecodeStats, Arc<Interner>) {
    let i = Arc::new(Interner::new());
    let mut d = Decoder::new(&i);
    let (mut nodes, mut edges) = (NodeBatch::default(), EdgeBatch::default());
    // Through the wire bytes, as the host decodes a plugin's stream.
    d.wire(&prost::Message::encode_to_vec(resp), &mut nodes, &mut edges)
        .expect("a valid ScanResponse");
    let stats = d.stats.clone();
    let mut g = Graph::new(i.clone());
    g.ingest_nodes(&[nodes], 1, 1);
    let e = g.ingest_edges(&[edges], 1, 1);
    assert_eq!(e.dangling, 0);
    g.rebuild_adjacency(1);
    (g, stats, i)
}

#[test]
fn nodes_keep_typed_properties_and_fill_the_columns() {
    let props = r#"{"state":"available","size_gib":500,"iops":3000.5,"encrypted":true,"kms":null,
        "volume_type":"gp2","attachments":[{"id":"i-1"}],"created_at":"2024-05-01T10:00:00Z",
        "tags":{"env":"prod","owner":"alice","count":3}}"#;
    let resp = pb::ScanResponse {
        nodes: vec![node(VOL, props, 40.0)],
        edges: vec![],
    };
    let (g, stats, i) = ingest(&resp);
    assert_eq!((stats.nodes, stats.rejected_nodes), (1, 0));
    let id = g
        .find(&Crn::parse("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1").unwrap())
        .unwrap();
    let n = g.node(id).unwrap();
    assert_eq!(
        &*i.resolve(n.ty()),
        "ec2:volume",
        "plugin form converted to the graph form"
    );
    assert_eq!(&*i.resolve(n.state()), "available");
    assert_eq!(n.cost_usd_mo(), 40.0);
    assert_eq!(n.creation_ts(), 1_714_557_600);
    let p = n.props();
    assert_eq!(p.get(i.intern("size_gib")), Some(ValueRef::Int(500)));
    assert_eq!(p.get(i.intern("iops")), Some(ValueRef::Float(3000.5)));
    assert_eq!(p.get(i.intern("encrypted")), Some(ValueRef::Bool(true)));
    assert_eq!(p.get(i.intern("kms")), Some(ValueRef::Null));
    assert_eq!(
        p.get(i.intern("state")),
        Some(ValueRef::Str("available")),
        "state stays a property"
    );
    assert_eq!(
        p.get(i.intern("attachments")),
        Some(ValueRef::Json(r#"[{"id":"i-1"}]"#))
    );
    assert_eq!(p.get(i.intern("tags")), None, "tags live in their own column");
    let tags: Vec<(String, String)> = n
        .tags()
        .map(|(k, v)| (i.resolve(k).to_string(), i.resolve(v).to_string()))
        .collect();
    assert_eq!(
        tags,
        vec![
            ("count".into(), "3".into()),
            ("env".into(), "prod".into()),
            ("owner".into(), "alice".into())
        ]
    );
}

#[test]
fn malformed_nodes_are_rejected_with_a_reason_and_the_rest_land() {
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(MAX_PROPERTIES_BYTES));
    let resp = pb::ScanResponse {
        nodes: vec![
            node("crn:svc:aws", "{}", 1.0),
            node(VOL, "{}", f64::NAN),
            node(VOL, "{}", f64::INFINITY),
            node(VOL, "{}", -1.0),
            node(VOL, "{not json", 1.0),
            node(VOL, "[1,2]", 1.0),
            node(VOL, &big, 1.0),
            node(VM, "", 70.0),
        ],
        edges: vec![],
    };
    let (g, stats, _) = ingest(&resp);
    assert_eq!((stats.nodes, stats.rejected_nodes), (1, 7));
    assert_eq!(g.node_rows(), 1);
    let reasons = stats.reasons.join("\n");
    for want in [
        "expected 8 segments",
        "cost NaN",
        "cost inf",
        "cost -1",
        "not valid JSON",
        "not an array",
        "exceed",
    ] {
        assert!(reasons.contains(want), "{want:?} in\n{reasons}");
    }
    let vm = g.node(g.nodes().next().unwrap().id()).unwrap();
    assert_eq!(vm.cost_usd_mo(), 70.0);
    assert_eq!(vm.creation_ts(), 0);
}

#[test]
fn edges_map_relations_reverse_and_keep_the_original() {
    let resp = pb::ScanResponse {
        nodes: vec![node(VOL, "{}", 1.0), node(VM, "{}", 1.0), node(SUBNET, "{}", 0.0)],
        edges: vec![
            edge(VOL, VM, "ATTACHED_TO"),
            edge(VM, SUBNET, "MEMBER_OF"),
            edge(VM, VOL, "PEERS_WITH"),
            edge("crn:bad", VM, "USES"),
        ],
    };
    let (g, stats, i) = ingest(&resp);
    assert_eq!((stats.edges, stats.rejected_edges), (3, 1));
    assert_eq!(stats.unknown_relations.get("PEERS_WITH"), Some(&1));
    let rel = i.intern("relation");
    let mut seen: Vec<(String, String, Relation, String)> = g
        .edges()
        .map(|e| {
            let original = match e.props().get(rel) {
                Some(ValueRef::Str(s)) => s.to_owned(),
                other => panic!("relation property: {other:?}"),
            };
            (g.crn(e.source()), g.crn(e.target()), e.relation(), original)
        })
        .collect();
    seen.sort();
    let vol = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1".to_string();
    let vm = "crn:svc:aws:us-east-1:ec2:instance:123456789012:i-1".to_string();
    let mut want = vec![
        (vol.clone(), vm.clone(), Relation::AttachedTo, "ATTACHED_TO".to_string()),
        (
            SUBNET.to_string(),
            vm.clone(),
            Relation::Contains,
            "MEMBER_OF".to_string(),
        ),
        (vm.clone(), vol.clone(), Relation::Uses, "PEERS_WITH".to_string()),
    ];
    want.sort();
    assert_eq!(seen, want);
}

/// Decodes one node with the scanner and with `serde_json` alone; both
/// must accept or reject it alike and land the same columns and properties.
fn same_both_ways(props: &str) {
    same_bytes_both_ways(props.as_bytes());
}

/// [`same_both_ways`] for properties that need not be text.
fn same_bytes_both_ways(props: &[u8]) -> bool {
    let i = Arc::new(Interner::new());
    let decode = |tree_only: bool| {
        let mut d = Decoder::new(&i);
        d.tree_only = tree_only;
        let mut nodes = NodeBatch::default();
        let n = pb::Node {
            crn: VOL.into(),
            properties: props.to_vec(),
            cost: 3.0,
        };
        let ok = d.node((&n).into(), &mut nodes);
        let mut g = Graph::new(i.clone());
        g.ingest_nodes(&[nodes], 1, 1);
        let seen = g.nodes().next().map(|n| {
            let props: Vec<(String, String)> = n
                .props()
                .map(|(k, v)| (i.resolve(k).to_string(), format!("{v:?}")))
                .collect();
            let tags: Vec<(String, String)> = n
                .tags()
                .map(|(k, v)| (i.resolve(k).to_string(), i.resolve(v).to_string()))
                .collect();
            (i.resolve(n.state()).to_string(), n.creation_ts(), props, tags)
        });
        (ok, d.stats.reasons, seen)
    };
    let scanned = decode(false);
    assert_eq!(scanned, decode(true), "{}", String::from_utf8_lossy(props));
    scanned.0 == Ok(true)
}

/// Properties that are not UTF-8, wherever the bad bytes are (a value, a
/// key, a nested or tags value, between tokens; a cut, overlong, surrogate
/// or out-of-range character, a stray continuation byte), are refused
/// as `serde_json` refuses them; text in other scripts lands.
#[test]
fn properties_that_are_not_utf8_are_refused_as_serde_json_refuses_them() {
    let good = r#"{"state":"ok","name":"données ✓ 𝄞","clé":1,"arr":["€"],"tags":{"équipe":"ß"}}"#;
    assert!(same_bytes_both_ways(good.as_bytes()));
    for bad in [
        &b"\xff"[..],
        b"\x80",
        b"\xc3",
        b"\xc3(",
        b"\xc0\xaf",
        b"\xe0\x80\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80",
        b"\xe2\x82",
    ] {
        for doc in [
            [&br#"{"state":"a"#[..], bad, br#"b"}"#].concat(),
            [&br#"{"k"#[..], bad, br#"":1}"#].concat(),
            [&br#"{"arr":["x"#[..], bad, br#""]}"#].concat(),
            [&br#"{"tags":{"env":"p"#[..], bad, br#""}}"#].concat(),
            [&br#"{"a":1,"#[..], bad, br#""b":2}"#].concat(),
            [&br#"{"a":"#[..], bad, b"}"].concat(),
        ] {
            assert!(!same_bytes_both_ways(&doc), "{doc:?} landed");
        }
    }
}

#[test]
fn the_scanner_lands_what_serde_json_lands() {
    for doc in [
        "",
        "{}",
        " { } ",
        r#"{"b":1,"a":2,"b":3}"#,
        r#"{"state":"on","state":"off","tags":{"z":"1","a":2,"a":"x"}}"#,
        r#"{"n":-0,"m":-12,"big":123456789012345678901,"f":1.5e3,"neg":-9223372036854775808,"x":0.1}"#,
        r#"{"creation_timestamp":1700000000123,"created_at":"2024-05-01T10:00:00Z"}"#,
        r#"{"creation_timestamp":-5,"created_at":"2024-05-01T10:00:00Z"}"#,
        r#"{"creation_timestamp":"soon","created_at":"2024-05-01T10:00:00+02:00"}"#,
        r#"{"creation_timestamp":17e8}"#,
        r#"{"creation_timestamp":1700000000.5,"created_at":"2024-05-01T10:00:00Z"}"#,
        r#"{"creation_timestamp":-0,"created_at":"2024-05-01T10:00:00Z"}"#,
        r#"{"creation_timestamp":17000000000000000000,"created_at":"2024-05-01T10:00:00Z"}"#,
        r#"{"cpu":25.31,"mem":2.0,"z":-0.0,"long":0.1234567890123456,"tags":{"ratio":2.50,"neg":-17.5}}"#,
        r#"{"esc":"a\"b\u00e9\n","state":"\u0061b","tags":{"k":"v\t","n":null,"b":true,"o":{"y":1,"x":[1, 2]}}}"#,
        r#"{"arr":[1, {"b":2,"a":1}, "x"],"obj":{"z":{},"a":[]},"tags":[1]}"#,
        r#"{"k\u0065y":1}"#,
        r#"{"unicode":"données ✓","tags":{"clé":"valeur"}}"#,
        "[1,2]",
        "\"text\"",
        "{not json",
        r#"{"a":01}"#,
        r#"{"a":1,}"#,
        r#"{"a":1} x"#,
        r#"{"a":"\ud800"}"#,
        r#"{"a":"tab	here"}"#,
        r#"{"a":1e999}"#,
        r#"{"a":-}"#,
        r#"{"a":tru}"#,
        r#"{"a":[1,2}"#,
        r#"{"a":{"b":1,}}"#,
    ] {
        same_both_ways(doc);
    }
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(140), "]".repeat(140));
    same_both_ways(&deep);
    let ok_deep = format!("{{\"a\":{}{}}}", "[".repeat(110), "]".repeat(110));
    same_both_ways(&ok_deep);
}

proptest::proptest! {
    /// One byte of a document replaced by any byte: the scanner lands
    /// what `serde_json` lands, and refuses what it refuses.
    #[test]
    fn the_scanner_agrees_with_serde_json_on_any_bytes(at in 0usize..80, byte in proptest::num::u8::ANY) {
        let doc = r#"{"state":"ok","name":"é ✓","n":12,"tags":{"env":"prod","clé":"€"},"arr":[1,"𝄞"]}"#;
        let mut bytes = doc.as_bytes().to_vec();
        let at = at % bytes.len();
        bytes[at] = byte;
        same_bytes_both_ways(&bytes);
    }

    #[test]
    fn the_scanner_agrees_with_serde_json_on_any_text(doc in r#"\{("[a-c]{0,2}":([0-9.e+-]{1,4}|"[a-c\\u0-9]{0,4}"|\[[0-9, ]{0,4}\]|true|null|\{"[a-b]":[0-9"]{1,3}\}),?){0,4}\} ?"#) {
        same_both_ways(&doc);
    }
}

/// CRNs sharing the text before their ids (in either form, with or
/// without `svc`, ids with colons) land where `Crn::parse` puts them,
/// however warm the decoder's prefix table is.
#[test]
fn crns_sharing_a_prefix_keep_their_own_segments() {
    let texts = [
        "crn:svc:aws:us-east-1:123456789012:volume:vol-1",
        "crn:svc:aws:us-east-1:123456789012:volume:vol-2",
        "crn:aws:us-east-1:123456789012:volume:vol-3",
        "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-4",
        "crn:svc:aws:us-east-1:ec2:volume:123456789012:arn:aws:ec2:vol-5",
        "crn:svc:aws:us-east-1:123456789012:role:arn:aws:iam::1:role/x",
        "crn:svc:aws:us-east-1:123456789012:role:arn:aws:iam::1:role/y",
        "crn:svc:aws:us-east-1:123456789012:role:r-1",
    ];
    let resp = pb::ScanResponse {
        nodes: texts.iter().chain(&texts).map(|t| node(t, "{}", 1.0)).collect(),
        edges: texts.windows(2).map(|w| edge(w[0], w[1], "USES")).collect(),
    };
    let (g, stats, _) = ingest(&resp);
    assert_eq!((stats.nodes, stats.rejected_nodes, stats.edges), (16, 0, 7));
    assert_each_where_parsed(&g, &texts);
}

/// Each of `texts` is a node of `g`, keyed where `Crn::parse` puts it, and
/// `g` holds nothing else.
fn assert_each_where_parsed(g: &Graph, texts: &[&str]) {
    for t in texts {
        let crn = Crn::parse(t).expect("valid");
        let id = g
            .find(&crn)
            .unwrap_or_else(|| panic!("{t} is not where Crn::parse puts it"));
        assert_eq!(g.crn(id), crn.to_string());
    }
    assert_eq!(g.nodes().count(), texts.len());
}

/// Graph-form CRNs are looked up piece by piece (place, type, account):
/// pieces met before in other combinations, the last account again after
/// another, and a bad segment between good ones, each land where
/// `Crn::parse` puts them, and a bad segment is rejected however well its
/// other pieces are known.
#[test]
fn graph_form_crns_whose_pieces_were_met_apart_keep_their_own_segments() {
    let good = [
        "crn:svc:aws:us-east-1:ec2:volume:111:vol-1",
        "crn:svc:aws:us-east-1:ec2:instance:111:i-1",
        "crn:svc:aws:us-east-1:ec2:volume:222:vol-2",
        "crn:svc:aws:eu-west-1:ec2:volume:111:vol-3",
        "crn:svc:gcp:eu-west-1:compute:disk:111:d-1",
        "crn:svc:aws:us-east-1:ec2:instance:222:i-2",
        "crn:svc:aws:us-east-1:ec2:volume:111:vol-4",
        "crn:aws:us-east-1:ec2:volume:111:vol-5",
        "crn:svc:aws:us-east-1:ec2:volume:11:vol-6",
        "crn:svc:aws:us-east-1:ec2:volume:1111:vol-7",
        "crn:svc:aws:us-east-1:ec2:volum:111:vol-8",
        "crn:svc:aws:us-east-1:ec2:volume:111:a:b:vol-9",
    ];
    let bad = [
        "crn:svc:aws:us-east-1:ec2:volume:1 1:vol-x",
        "crn:svc:aws:us-east-1:ec2:vol ume:111:vol-x",
        "crn:svc:aws:us east-1:ec2:volume:111:vol-x",
        "crn:svc:aws:us-east-1:ec2:volume::vol-x",
    ];
    let mut texts: Vec<&str> = good.to_vec();
    texts.splice(3..3, bad);
    texts.extend(good);
    let resp = pb::ScanResponse {
        nodes: texts.iter().map(|t| node(t, "{}", 1.0)).collect(),
        edges: good.windows(2).map(|w| edge(w[1], w[0], "USES")).collect(),
    };
    let (g, stats, _) = ingest(&resp);
    assert_eq!(
        (stats.nodes, stats.rejected_nodes),
        (2 * good.len() as u64, bad.len() as u64)
    );
    assert_eq!(stats.edges, good.len() as u64 - 1);
    assert_each_where_parsed(&g, &good);
    assert_eq!(g.edges().count(), good.len() - 1);
}

/// One decoder reading nodes of one type one after another (tags repeated
/// word for word, changed, missing, not an object, needing the tree; keys
/// repeated, reordered, duplicated, split differently, taking the
/// columns' roles or not) lands each node as a fresh decoder through `serde_json` does.
#[test]
fn a_warm_decoder_lands_each_node_as_a_fresh_one_does() {
    let docs = [
        r#"{"tags":{"env":"prod","team":"a"}}"#,
        r#"{"tags":{"env":"prod","team":"a"}}"#,
        r#"{"x":1}"#,
        r#"{"tags":{"env":"prod","team":"a"}}"#,
        r#"{"tags":{"env":"prod","team":"b"}}"#,
        r#"{"tags":[1]}"#,
        r#"{"tags":{"env":"prod","team":"b"}}"#,
        r#"{"tags":{"env":"prod","team":"b"},"esc":"a\"b"}"#,
        r#"{"tags":{"env":"prod","team":"b","o":{"y":1}}}"#,
        r#"{"tags":{"env":"prod","team":"b"}}"#,
        r#"{"tags":{}}"#,
        r#"{"tags":{"env":"prod","team":"a"}}"#,
        r#"{"ab":1,"c":2,"state":"on"}"#,
        r#"{"a":1,"bc":2,"state":"on"}"#,
        r#"{"ab":1,"c":2,"state":"on"}"#,
        r#"{"c":2,"ab":1,"state":"off"}"#,
        r#"{"ab":1,"c":2,"stat":"on"}"#,
        r#"{"ab":1,"c":2,"created_at":"2024-05-01T10:00:00Z"}"#,
        r#"{"ab":1,"c":2,"creation_timestamp":1700000000}"#,
        r#"{"ab":1,"c":2,"creation_timestamp":1700000001}"#,
        r#"{"ab":1,"c":2,"tags":{"k":"v"}}"#,
        r#"{"ab":1,"c":2,"tagz":{"k":"v"}}"#,
        r#"{"ab":"x","c":[1],"state":"on"}"#,
        r#"{"ab":1,"ab":7,"c":2,"state":"on"}"#,
        r#"{"c":2,"ab":1,"ab":5,"state":"on"}"#,
        r#"{"ab":1,"c":2,"state":"on"}"#,
        r#"{"z":[1],"tags":{"env":"prod","team":"a"},"a":2.5}"#,
        r#"{"a":2.5,"tags":{"env":"prod","team":"a"},"z":[1]}"#,
        r#"{"a":"s","tags":{"env":"prod","team":"a"},"z":"t"}"#,
    ];
    let (got, want) = warm_and_cold(&docs);
    assert_eq!(got.len(), docs.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{}", docs[k]);
    }
    let team_a = [
        ("env".to_owned(), "prod".to_owned()),
        ("team".to_owned(), "a".to_owned()),
    ];
    assert_eq!(got[1].3, team_a);
    assert!(got[2].3.is_empty() && got[5].3.is_empty() && got[10].3.is_empty());
    assert_eq!((got[15].0.as_str(), got[16].0.as_str()), ("off", "unknown"));
}

/// A node as it landed: state, creation time, properties and tags.
type Seen = (String, u64, Vec<(String, String)>, Vec<(String, String)>);

/// `docs` as the properties of one type's nodes, landed through one warm
/// decoder, and each through a fresh decoder and `serde_json` alone.
fn warm_and_cold(docs: &[impl AsRef<str>]) -> (Vec<Seen>, Vec<Seen>) {
    let i = Arc::new(Interner::new());
    let landed = |nodes: NodeBatch| -> Vec<Seen> {
        let mut g = Graph::new(i.clone());
        g.ingest_nodes(&[nodes], 1, 1);
        let mut by_id: Vec<(usize, Seen)> = g
            .nodes()
            .map(|n| {
                let k = n
                    .crn()
                    .rsplit('-')
                    .next()
                    .and_then(|k| k.parse().ok())
                    .unwrap_or(usize::MAX);
                let props = n
                    .props()
                    .map(|(k, v)| (i.resolve(k).to_string(), format!("{v:?}")))
                    .collect();
                let tags = n
                    .tags()
                    .map(|(k, v)| (i.resolve(k).to_string(), i.resolve(v).to_string()))
                    .collect();
                (k, (i.resolve(n.state()).to_string(), n.creation_ts(), props, tags))
            })
            .collect();
        by_id.sort_by_key(|(k, _)| *k);
        by_id.into_iter().map(|(_, seen)| seen).collect()
    };
    let crn = |k: usize| format!("crn:svc:aws:us-east-1:123456789012:volume:vol-{k}");
    let mut warm = Decoder::new(&i);
    let mut nodes = NodeBatch::default();
    for (k, doc) in docs.iter().enumerate() {
        let doc = doc.as_ref();
        assert_eq!(
            warm.node((&node(&crn(k), doc, 1.0)).into(), &mut nodes),
            Ok(true),
            "{doc}"
        );
    }
    let mut want = NodeBatch::default();
    for (k, doc) in docs.iter().enumerate() {
        let doc = doc.as_ref();
        let mut cold = Decoder::new(&i);
        cold.tree_only = true;
        assert_eq!(
            cold.node((&node(&crn(k), doc, 1.0)).into(), &mut want),
            Ok(true),
            "{doc}"
        );
    }
    (landed(nodes), landed(want))
}

proptest::proptest! {
    /// Nodes of one type whose keys come in a few orders, each met again
    /// and again, some with a key written twice: a warm decoder, which
    /// keeps each order it met and puts a document in that order into key
    /// order by it, lands each node as a fresh decoder through
    /// `serde_json` does.
    #[test]
    fn documents_in_any_key_order_land_as_serde_json_reads_them(
        picks in proptest::collection::vec((0usize..5, 0usize..10), 1..40)
    ) {
        let sets: [&[&str]; 5] = [
            &["state", "b", "a"],
            &["z", "tags", "a", "created_at"],
            &["b", "a", "b", "c"],
            &["c", "b", "a", "state"],
            &["a", "b", "c", "state"],
        ];
        let docs: Vec<String> = picks
            .iter()
            .enumerate()
            .map(|(n, &(set, order))| {
                let mut keys = sets[set].to_vec();
                let len = keys.len();
                keys.rotate_left(order % len);
                if (order / len) % 2 == 1 {
                    keys.reverse();
                }
                let entries: Vec<String> = keys
                    .iter()
                    .enumerate()
                    .map(|(j, key)| match *key {
                        "tags" => format!(r#""tags":{{"env":"e{}"}}"#, n % 3),
                        "state" => format!(r#""state":"s{}""#, n % 2),
                        "created_at" => r#""created_at":"2024-05-01T10:00:00Z""#.to_owned(),
                        key => format!(r#""{key}":{}"#, n * 10 + j),
                    })
                    .collect();
                format!("{{{}}}", entries.join(","))
            })
            .collect();
        let (got, want) = warm_and_cold(&docs);
        proptest::prop_assert_eq!(got.len(), docs.len());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            proptest::prop_assert_eq!(g, w, "{}", &docs[k]);
        }
    }
}

/// A node's CRN that is not UTF-8 fails the message where it stands, as
/// prost fails it, whether the decoder knows its prefix (a bad byte in the
/// id, in either form) or not (in a segment, or in what is no CRN at all);
/// the nodes before it land. The same CRNs as text land, or are refused.
#[test]
fn a_node_crn_that_is_not_utf8_fails_the_message_where_it_stands() {
    for (crn, lands) in [
        ("crn:svc:aws:us-east-1:123456789012:instance:i-X", true),
        ("crn:svc:aws:us-east-1:ec2:subnet:123456789012:subnet-X", true),
        ("crn:svc:aws:us-eXst-1:ec2:subnet:123456789012:subnet-2", true),
        ("crn:svc:aws:us-east-1:ec2:subnet:12345678901X:subnet-2", true),
        ("crn:svc:awX", false),
    ] {
        let resp = pb::ScanResponse {
            nodes: [VOL, VM, SUBNET, crn, "crn:svc:aws:us-east-1:123456789012:instance:i-9"]
                .iter()
                .map(|c| node(c, "{}", 1.0))
                .collect(),
            edges: vec![],
        };
        let good = prost::Message::encode_to_vec(&resp);
        let at = good
            .windows(crn.len())
            .position(|w| w == crn.as_bytes())
            .and_then(|at| Some(at + crn.find('X')?))
            .expect("the CRN is in the message");
        let mut bad = good.clone();
        bad[at] = 0xff;
        let i = Interner::new();
        let decode = |bytes: &[u8]| {
            let mut d = Decoder::new(&i);
            let (mut nodes, mut edges) = (NodeBatch::default(), EdgeBatch::default());
            let r = d.wire(bytes, &mut nodes, &mut edges);
            (r, d.stats.nodes, d.stats.rejected_nodes, nodes.len())
        };
        let want = if lands { (Ok(()), 5, 0, 5) } else { (Ok(()), 4, 1, 4) };
        assert_eq!(decode(&good), want, "{crn}");
        let fault = Err(WireError::Utf8 {
            message: "svc.provider.v1.Node",
            field: 1,
        });
        assert_eq!(decode(&bad), (fault, 3, 0, 3), "{crn}");
    }
}

/// Endpoints named again by the same bytes are the same endpoints; a CRN
/// that was rejected is rejected again; a CRN that is not UTF-8 fails the
/// message where it stands, as it did before endpoints were remembered.
#[test]
fn edges_naming_an_endpoint_again_and_a_crn_or_relation_that_is_not_utf8() {
    const BAD: &str = "crn:svc:aws:us-east-1:123456789012:instance:i-2";
    const LOOP: &str = "crn:svc:aws:us-east-1:123456789012:instance:i-3";
    let resp = pb::ScanResponse {
        nodes: vec![node(VOL, "{}", 1.0), node(VM, "{}", 1.0)],
        edges: vec![
            edge(VOL, VM, "ATTACHED_TO"),
            edge(VM, VOL, "USES"),
            edge("crn:svc:aws", VM, "USES"),
            edge("crn:svc:aws", VM, "USES"),
            edge(LOOP, LOOP, "USES"),
            edge(VOL, BAD, "USES"),
            edge(VM, VOL, "FROBS"),
            edge(VM, VOL, "FROBS"),
            edge(VM, VOL, "DEPENDS_ON"),
        ],
    };
    let good = prost::Message::encode_to_vec(&resp);
    // The same message with one byte of one CRN made invalid UTF-8.
    let at = good
        .windows(BAD.len())
        .position(|w| w == BAD.as_bytes())
        .expect("the CRN is in the message");
    let mut bad = good.clone();
    bad[at + BAD.len() - 1] = 0xff;
    let i = Interner::new();
    let decode = |bytes: &[u8]| {
        let mut d = Decoder::new(&i);
        let (mut nodes, mut edges) = (NodeBatch::default(), EdgeBatch::default());
        let r = d.wire(bytes, &mut nodes, &mut edges);
        (r, d.stats, edges)
    };
    let (r, stats, edges) = decode(&good);
    assert_eq!(r, Ok(()));
    assert_eq!((stats.edges, stats.rejected_edges), (7, 2));
    assert_eq!(stats.unknown_relations.get("FROBS"), Some(&2), "counted per edge");
    assert!(
        stats.reasons.iter().all(|r| r.starts_with("edge \"crn:svc:aws\"")),
        "{:?}",
        stats.reasons
    );
    let ids: Vec<&str> = edges.endpoint_keys().map(|(_, id)| id).collect();
    assert_eq!(ids, ["vol-1", "i-1", "i-3", "i-2"]);
    // ATTACHED_TO and USES from the volume and the instance, each named
    // by the same bytes, are the same two endpoints; an edge from a new
    // node to itself names one.
    let ends: Vec<(usize, usize)> = edges.iter_indexed().map(|e| (e.src, e.dst)).collect();
    assert_eq!(ends, [(0, 1), (1, 0), (2, 2), (0, 3), (1, 0), (1, 0), (1, 0)]);
    let relation = i.intern("relation");
    let relations: Vec<String> = edges.iter().map(|e| format!("{:?}", e.props.get(relation))).collect();
    let want = ["ATTACHED_TO", "USES", "USES", "USES", "FROBS", "FROBS", "DEPENDS_ON"];
    let want: Vec<String> = want.iter().map(|r| format!("{:?}", Some(ValueRef::Str(r)))).collect();
    assert_eq!(relations, want);
    // The same message with the last relation made invalid UTF-8: the
    // edges before it land, it does not, and the message fails.
    let mut bad_relation = good.clone();
    let at = good
        .windows(b"DEPENDS_ON".len())
        .position(|w| w == b"DEPENDS_ON")
        .expect("the relation is in the message");
    bad_relation[at] = 0xff;
    let (r, stats, edges) = decode(&bad_relation);
    assert_eq!(
        r,
        Err(WireError::Utf8 {
            message: "svc.provider.v1.Edge",
            field: 3
        })
    );
    assert_eq!((stats.edges, edges.len()), (6, 6));
    let (r, stats, edges) = decode(&bad);
    assert_eq!(
        r,
        Err(WireError::Utf8 {
            message: "svc.provider.v1.Edge",
            field: 2
        })
    );
    assert_eq!((stats.edges, stats.rejected_edges, edges.len()), (3, 2, 3));
}

/// The endpoints a decoder remembers by CRN bytes, and the relation
/// properties it shares, are those of the batch it writes: handed another
/// batch, it starts over.
#[test]
fn a_decoder_handed_another_edge_batch_names_that_batch_s_endpoints() {
    let message = |edges: Vec<pb::Edge>| prost::Message::encode_to_vec(&pb::ScanResponse { nodes: vec![], edges });
    let first = message(vec![edge(VOL, VM, "ATTACHED_TO"), edge(SUBNET, VM, "CONTAINS")]);
    let second = message(vec![edge(VM, SUBNET, "USES"), edge(VOL, VM, "ATTACHED_TO")]);
    let i = Interner::new();
    let mut d = Decoder::new(&i);
    let mut nodes = NodeBatch::default();
    let (mut a, mut b) = (EdgeBatch::with_capacity(8), EdgeBatch::with_capacity(8));
    d.wire(&first, &mut nodes, &mut a).expect("valid");
    d.wire(&second, &mut nodes, &mut b).expect("valid");
    d.wire(&second, &mut nodes, &mut a).expect("valid");
    let ends = |batch: &EdgeBatch| -> Vec<(String, String)> {
        let ids: Vec<&str> = batch.endpoint_keys().map(|(_, id)| id).collect();
        batch
            .iter_indexed()
            .map(|e| (ids[e.src].to_owned(), ids[e.dst].to_owned()))
            .collect()
    };
    let pairs = |p: &[(&str, &str)]| -> Vec<(String, String)> {
        p.iter().map(|(s, t)| ((*s).to_owned(), (*t).to_owned())).collect()
    };
    assert_eq!(ends(&b), pairs(&[("i-1", "subnet-1"), ("vol-1", "i-1")]));
    assert_eq!(
        ends(&a),
        pairs(&[
            ("vol-1", "i-1"),
            ("subnet-1", "i-1"),
            ("i-1", "subnet-1"),
            ("vol-1", "i-1")
        ])
    );
    assert_eq!((a.endpoints(), b.endpoints()), (3, 3));
    // Each edge carries its own relation string, though the decoder
    // writes it once per batch and relation.
    let relation = i.intern("relation");
    let relations = |batch: &EdgeBatch| -> Vec<String> {
        batch
            .iter()
            .map(|e| match e.props.get(relation) {
                Some(ValueRef::Str(s)) => s.to_owned(),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(relations(&b), ["USES", "ATTACHED_TO"]);
    assert_eq!(relations(&a), ["ATTACHED_TO", "CONTAINS", "USES", "ATTACHED_TO"]);
}

/// Past its byte limit a decoder remembers no more endpoints of the batch
/// (the ones it has keep answering), and another batch starts it over.
#[test]
fn endpoints_past_the_byte_limit_are_not_remembered() {
    let (first, other) = (EdgeBatch::default(), EdgeBatch::default());
    let mut ends = Ends::default();
    ends.follow(&first);
    let (a, b) = (Ends::hash(b"a"), Ends::hash(b"b"));
    ends.insert(b"a", a, 0);
    ends.names.resize(MAX_END_NAMES, b'x');
    ends.insert(b"b", b, 1);
    assert_eq!((ends.get(b"a", a), ends.get(b"b", b)), (Some(0), None));
    assert_eq!(ends.names.len(), MAX_END_NAMES);
    ends.follow(&first);
    assert_eq!(ends.get(b"a", a), Some(0), "the same batch keeps its endpoints");
    ends.follow(&other);
    assert_eq!(ends.get(b"a", a), None);
    assert!(ends.names.is_empty());
}

/// What a decoder remembers (key lists by type, tags objects by text,
/// relation strings) stays within its byte limits whatever a plugin
/// sends, and every node and edge still lands.
#[test]
fn remembered_keys_tags_and_relations_stay_within_their_limits() {
    let i = Interner::new();
    let mut d = Decoder::new(&i);
    let mut nodes = NodeBatch::default();
    let pad = "x".repeat(4_000);
    for k in 0..3_000 {
        // A type of its own, with a key of 4 kB and a tags object of 4 kB
        // never seen before.
        let crn = format!("crn:svc:aws:us-east-1:ec2:kind{k}:123456789012:id-{k}");
        let doc = format!(r#"{{"{pad}{k}":1,"tags":{{"t":"{pad}{k}"}}}}"#);
        assert_eq!(d.node((&node(&crn, &doc, 1.0)).into(), &mut nodes), Ok(true), "{k}");
        assert!(d.key_bytes <= MAX_KEY_BYTES + pad.len() + 8, "{k}: {}", d.key_bytes);
        assert!(d.tag_sets.held <= MAX_TAG_SET_BYTES, "{k}: {}", d.tag_sets.held);
    }
    assert_eq!(nodes.len(), 3_000);
    assert!(d.key_memos.len() < 3_000 && d.tag_sets.map.len() < 3_000);
    let long = "R".repeat(MAX_RELATION_MEMO + 1);
    let mut edges = EdgeBatch::default();
    for rel in [long.as_str(), "USES", long.as_str()] {
        assert_eq!(d.edge((&edge(VOL, VM, rel)).into(), &mut edges), Ok(true));
    }
    assert_eq!(edges.len(), 3);
    assert_eq!(d.stats.unknown_relations.get(&long), Some(&2));
    assert!(d.relations.get(b"USES").is_some() && d.relations.get(long.as_bytes()).is_none());
}

/// A CRN is accepted when its graph form, in which it lands and prints,
/// is within the limit, also when a warm decoder knows its prefix or its
/// pieces: written without `svc` or in plugin form, the text may be
/// shorter than the limit and its graph form longer.
#[test]
fn crns_within_the_limit_only_in_a_shorter_form_are_refused_warm_or_cold() {
    let i = Arc::new(Interner::new());
    let mut warm = Decoder::new(&i);
    let mut nodes = NodeBatch::default();
    for (prefix, fill) in [
        ("crn:aws:us-east-1:ec2:volume:1:", "w"),
        ("crn:svc:aws:us-east-1:1:volume:", "x"),
        ("crn:aws:us-east-1:1:volume:", "y"),
        ("crn:svc:gcp:r:1:widget:", "z"),
    ] {
        // The decoder learns the prefix (or the pieces) from a short one.
        let short = node(&format!("{prefix}known-{fill}"), "{}", 1.0);
        assert_eq!(warm.node((&short).into(), &mut nodes), Ok(true), "{prefix}");
        let extra = Crn::parse(&format!("{prefix}i")).unwrap().to_string().len() - prefix.len() - 1;
        for graph_len in [MAX_CRN_LEN, MAX_CRN_LEN + 1] {
            let text = format!("{prefix}{}", fill.repeat(graph_len - extra - prefix.len()));
            assert!(text.len() <= MAX_CRN_LEN);
            let n = node(&text, "{}", 1.0);
            let want = Crn::parse(&text).is_ok();
            assert_eq!(want, graph_len <= MAX_CRN_LEN);
            assert_eq!(warm.node((&n).into(), &mut nodes), Ok(want), "{prefix} {graph_len}");
            let mut cold = Decoder::new(&i);
            assert_eq!(cold.node((&n).into(), &mut NodeBatch::default()), Ok(want));
        }
    }
    let mut g = Graph::new(i.clone());
    g.ingest_nodes(&[nodes], 1, 1);
    assert_eq!(g.nodes().count(), 8);
    for n in g.nodes() {
        let crn = n.crn();
        assert!(crn.len() <= MAX_CRN_LEN);
        assert_eq!(Crn::parse(&crn).map(|c| c.to_string()), Ok(crn.clone()));
    }
}

/// `serde_json` reads every value of a document, also one that a later
/// value of the same key replaces: a document whose replaced value it
/// refuses (a number out of range, a lone surrogate, either inside an
/// array or object, at the top or in the tags, or tags that are not an
/// object) is refused as it refuses
/// it, by a fresh decoder and by one that knows the document's keys and
/// their order.
#[test]
fn a_replaced_value_serde_json_refuses_fails_the_document_as_it_does() {
    let refused = [
        r#"{"f":1.5e78901,"f":1}"#,
        r#"{"f":-1e400,"g":2,"f":"x"}"#,
        r#"{"a":"\ud800","a":1}"#,
        r#"{"a":[1,1e999],"b":0,"a":null}"#,
        r#"{"a":{"b":"\udc00"},"a":{}}"#,
        r#"{"tags":{"k":1e999,"k":"v"}}"#,
        r#"{"state":"on","tags":{"k":"\ud800x","k":"v"}}"#,
        r#"{"tags":1e999}"#,
        r#"{"tags":[1e999]}"#,
        r#"{"tags":"\ud800"}"#,
    ];
    for doc in refused {
        assert!(!same_bytes_both_ways(doc.as_bytes()), "{doc}");
    }
    // Replaced values serde_json reads do not fail it.
    for doc in [
        r#"{"f":1.5e308,"f":1}"#,
        r#"{"f":1e-400,"f":1}"#,
        r#"{"a":"\ud83d\ude00","a":[1e3,{"x":"\u00e9"}],"a":2}"#,
        r#"{"tags":{"k":12345678901234567890123,"k":"v"}}"#,
    ] {
        assert!(same_bytes_both_ways(doc.as_bytes()), "{doc}");
    }
    // A warm decoder that learned the same keys, in the same order, from
    // a document it landed.
    let i = Arc::new(Interner::new());
    let mut warm = Decoder::new(&i);
    let mut nodes = NodeBatch::default();
    for bad in refused {
        let good = bad
            .replace("1.5e78901", "1.5")
            .replace("-1e400", "-1")
            .replace("1e999", "1")
            .replace("\\ud800", "u")
            .replace("\\udc00", "u");
        assert_eq!(
            warm.node((&node(VOL, &good, 1.0)).into(), &mut nodes),
            Ok(true),
            "{good}"
        );
        let mut cold = Decoder::reference(&i);
        let want = cold.node((&node(VOL, bad, 1.0)).into(), &mut NodeBatch::default());
        assert_eq!(want, Ok(false), "{bad}");
        let before = warm.stats.reasons.len();
        assert_eq!(warm.node((&node(VOL, bad, 1.0)).into(), &mut nodes), want, "{bad}");
        assert_eq!(warm.stats.reasons[before..], cold.stats.reasons[..], "{bad}");
    }
}

#[test]
fn a_node_the_graph_holds_as_it_is_sent_is_found_and_not_decoded() {
    let (vol, vm) = (r#"{"state":"available","size_gib":500}"#, r#"{"state":"running"}"#);
    let first = pb::ScanResponse {
        nodes: vec![node(VOL, vol, 40.0), node(VM, vm, 10.0)],
        edges: vec![],
    };
    let (mut g, _, i) = ingest(&first);
    let decode = |g: &Graph, resp: &pb::ScanResponse| {
        let mut d = Decoder::new(&i);
        let (mut nodes, mut edges) = (NodeBatch::default(), EdgeBatch::default());
        d.wire_in(&prost::Message::encode_to_vec(resp), &mut nodes, &mut edges, Some(g))
            .expect("a valid ScanResponse");
        (nodes, d.stats)
    };
    let (nodes, stats) = decode(&g, &first);
    assert_eq!((nodes.len(), nodes.found.len()), (0, 2), "both found");
    assert_eq!((stats.nodes, stats.unchanged), (2, 2));
    let aws = i.intern("aws");
    assert!(nodes.found.iter().all(|f| f.provider == aws));

    // Another cost, and the same properties written otherwise: decoded,
    // each with its fingerprint as its content hash.
    let vm_spaced = r#"{ "state": "running" }"#;
    let second = pb::ScanResponse {
        nodes: vec![node(VOL, vol, 41.0), node(VM, vm_spaced, 10.0)],
        edges: vec![],
    };
    let (nodes, stats) = decode(&g, &second);
    assert_eq!((nodes.len(), nodes.found.len(), stats.unchanged), (2, 0, 0));
    let fingerprints: Vec<u64> = nodes.rows.iter().map(|n| n.content).collect();
    assert_eq!(
        fingerprints,
        [
            source_fingerprint(vol.as_bytes(), 41.0),
            source_fingerprint(vm_spaced.as_bytes(), 10.0)
        ]
    );
    let applied = g.ingest_nodes(&[nodes], 2, 2);
    assert_eq!(
        (applied.changed, applied.unchanged),
        (1, 1),
        "the same properties are no change"
    );
    let (nodes, _) = decode(&g, &second);
    assert_eq!(nodes.found.len(), 2, "found under their new fingerprints");

    // A retired node is decoded, to be revived.
    g.retire_unseen(&[aws], 3, 3);
    let (nodes, stats) = decode(&g, &second);
    assert_eq!((nodes.len(), stats.unchanged), (2, 0));
    let applied = g.ingest_nodes(&[nodes], 4, 4);
    assert_eq!(applied.revived, 2);
}
