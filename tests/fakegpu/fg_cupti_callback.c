/*
 * fg_cupti_callback.c - the fake CUPTI's callback API and graph ids:
 * cuptiSubscribe/Unsubscribe, cuptiEnableCallback, cuptiEnableDomain,
 * cuptiGetCallbackState, the one callback that fires
 * (CUPTI_CB_DOMAIN_RESOURCE / CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, from
 * the driver's node_cloned hook), and cuptiGetGraphNodeId, cuptiGetGraphId
 * and cuptiGetGraphExecId.
 *
 * Every other (domain, callback id) pair can be enabled and simply never
 * fires: the fake has no API or synchronize callbacks.
 *
 * The subscriber's callback is called with no lock held, ours or the
 * driver's (fg_cupti_hooks.h): the client calls cuptiGetGraphNodeId, which
 * takes the driver's lock, from inside it.
 */
#include "fg_cupti_internal.h"

#include <string.h>

/* The handle given to the one subscriber (the type is opaque in cupti.h). */
struct CUpti_Subscriber_st {
    CUpti_CallbackFunc callback;
    void *userdata;
};
static struct CUpti_Subscriber_st fgc_subscriber;

/* ------------------------------------------------------------ subscription */

FGC_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                               CUpti_CallbackFunc callback, void *userdata)
{
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fgc_busy())
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    pthread_mutex_lock(&fgc.lock);
    CUptiResult rc = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (!fgc.subscribed) {
        fgc.subscribed = true;
        fgc_subscriber.callback = callback;
        fgc_subscriber.userdata = userdata;
        *subscriber = &fgc_subscriber;
        rc = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&fgc.lock);
    return rc;
}

void fgc_unsubscribe_locked(void)
{
    fgc.subscribed = false;
    fgc.cb_clone = false;
    fgc_subscriber = (struct CUpti_Subscriber_st){0};
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    pthread_mutex_lock(&fgc.lock);
    CUptiResult rc = CUPTI_ERROR_INVALID_PARAMETER;
    if (subscriber == &fgc_subscriber && fgc.subscribed) {
        fgc_unsubscribe_locked();
        rc = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&fgc.lock);
    return rc;
}

/* ---------------------------------------------------------- enable/disable */

static bool fgc_domain_ok(CUpti_CallbackDomain domain)
{
    return domain > CUPTI_CB_DOMAIN_INVALID && domain < CUPTI_CB_DOMAIN_SIZE;
}

/* Under fgc.lock: the subscriber is ours and current. */
static bool fgc_subscriber_ok(CUpti_SubscriberHandle subscriber)
{
    return subscriber == &fgc_subscriber && fgc.subscribed;
}

/* Enabling a callback attaches to the driver: its hook is what fires. */
static CUptiResult fgc_enable(uint32_t enable, CUpti_SubscriberHandle subscriber,
                              CUpti_CallbackDomain domain, bool clone)
{
    if (!fgc_domain_ok(domain))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (enable && !fgc_driver())
        return CUPTI_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&fgc.lock);
    CUptiResult rc = CUPTI_ERROR_INVALID_PARAMETER;
    if (fgc_subscriber_ok(subscriber)) {
        if (clone)
            fgc.cb_clone = enable != 0;
        rc = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&fgc.lock);
    return rc;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
                                                    CUpti_SubscriberHandle subscriber,
                                                    CUpti_CallbackDomain domain,
                                                    CUpti_CallbackId cbid)
{
    bool clone = domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED;
    return fgc_enable(enable, subscriber, domain, clone);
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
                                                  CUpti_SubscriberHandle subscriber,
                                                  CUpti_CallbackDomain domain)
{
    return fgc_enable(enable, subscriber, domain, domain == CUPTI_CB_DOMAIN_RESOURCE);
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *enable,
                                                      CUpti_SubscriberHandle subscriber,
                                                      CUpti_CallbackDomain domain,
                                                      CUpti_CallbackId cbid)
{
    if (!enable || !fgc_domain_ok(domain))
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&fgc.lock);
    CUptiResult rc = CUPTI_ERROR_INVALID_PARAMETER;
    if (fgc_subscriber_ok(subscriber)) {
        /* Only the clone callback is tracked; the others never fire. */
        *enable = domain == CUPTI_CB_DOMAIN_RESOURCE &&
                  cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED && fgc.cb_clone;
        rc = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&fgc.lock);
    return rc;
}

/* ------------------------------------------------------ the clone callback */

/* The driver's node_cloned hook: no lock held on entry (fg_cupti_hooks.h). */
void fgc_hook_node_cloned(const struct fg_cupti_clone *clone)
{
    pthread_mutex_lock(&fgc.lock);
    CUpti_CallbackFunc cb = fgc.cb_clone ? fgc_subscriber.callback : NULL;
    void *userdata = fgc_subscriber.userdata;
    pthread_mutex_unlock(&fgc.lock);
    if (!cb)
        return;
    CUpti_GraphData gd = {
        .graph = (CUgraph)clone->graph,
        .originalGraph = (CUgraph)clone->original_graph,
        .node = (CUgraphNode)clone->node,
        .originalNode = (CUgraphNode)clone->original_node,
        .nodeType = (CUgraphNodeType)clone->node_type,
        .dependency = NULL,
        .graphExec = NULL, /* real CUPTI may not know the executable graph yet */
    };
    CUpti_ResourceData rd;
    memset(&rd, 0, sizeof rd);
    rd.context = (CUcontext)clone->context;
    rd.resourceDescriptor = &gd;
    cb(userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, &rd);
}

/* --------------------------------------------------------------- graph ids */

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId)
{
    if (!node || !nodeId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const struct fg_cupti_driver *drv = fgc_driver();
    if (!drv)
        return CUPTI_ERROR_NOT_INITIALIZED;
    return drv->node_id(node, nodeId) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t *pId)
{
    if (!graph || !pId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const struct fg_cupti_driver *drv = fgc_driver();
    if (!drv)
        return CUPTI_ERROR_NOT_INITIALIZED;
    return drv->graph_id(graph, pId) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graphExec, uint32_t *pId)
{
    if (!graphExec || !pId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const struct fg_cupti_driver *drv = fgc_driver();
    if (!drv)
        return CUPTI_ERROR_NOT_INITIALIZED;
    return drv->exec_id(graphExec, pId) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
