//! Builders for transaction guards and operations.

use crate::pb::etcdserverpb::{
    Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest,
    compare::{CompareResult, CompareTarget, TargetUnion},
    request_op::Request,
};

/// `create_revision(key) == rev` (0: the key does not exist).
pub fn create_revision_is(key: &[u8], rev: i64) -> Compare {
    Compare {
        result: CompareResult::Equal as i32,
        target: CompareTarget::Create as i32,
        key: key.to_vec(),
        target_union: Some(TargetUnion::CreateRevision(rev)),
        range_end: Vec::new(),
    }
}

/// `value(key) == value` (false when the key does not exist).
pub fn value_is(key: &[u8], value: &[u8]) -> Compare {
    Compare {
        result: CompareResult::Equal as i32,
        target: CompareTarget::Value as i32,
        key: key.to_vec(),
        target_union: Some(TargetUnion::Value(value.to_vec())),
        range_end: Vec::new(),
    }
}

/// A put of `value` under `key`, tied to `lease` unless it is 0.
pub fn put(key: &[u8], value: Vec<u8>, lease: i64) -> RequestOp {
    RequestOp {
        request: Some(Request::RequestPut(PutRequest {
            key: key.to_vec(),
            value,
            lease,
            ..Default::default()
        })),
    }
}

/// A read of one key.
pub fn get(key: &[u8]) -> RequestOp {
    RequestOp {
        request: Some(Request::RequestRange(RangeRequest {
            key: key.to_vec(),
            ..Default::default()
        })),
    }
}

/// A delete of `[key, range_end)` (only `key` when `range_end` is empty).
pub fn delete_range(key: &[u8], range_end: Vec<u8>) -> RequestOp {
    RequestOp {
        request: Some(Request::RequestDeleteRange(DeleteRangeRequest {
            key: key.to_vec(),
            range_end,
            ..Default::default()
        })),
    }
}

/// A transaction.
pub fn txn(compare: Vec<Compare>, success: Vec<RequestOp>, failure: Vec<RequestOp>) -> TxnRequest {
    TxnRequest {
        compare,
        success,
        failure,
    }
}
