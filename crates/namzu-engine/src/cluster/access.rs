//! SelfSubjectAccessReview: may the current user do this? Asked up front so a UI can disable an
//! action and say why instead of failing later.

use super::connect::Connection;
use super::error::{ApiCall, ClusterError};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

/// Whether `verb` on `group/resource` is allowed in `namespace` (`None` = cluster-wide).
pub async fn can(
    conn: &Connection,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
) -> Result<bool, ClusterError> {
    // `pods/log` is the resource `pods` and its subresource `log`, as the API server asks RBAC
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, sub)) => (r, Some(sub.to_string())),
        None => (resource, None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource,
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let op = ApiCall {
        verb: "create",
        resource: "selfsubjectaccessreviews.authorization.k8s.io".into(),
        namespace: None,
        name: String::new(),
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(conn.client.clone());
    let answer = conn.bounded(&op, api.create(&PostParams::default(), &review)).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}
