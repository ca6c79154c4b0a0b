/*
 * api_call.c — owns the life of an MNS API call's state (api_call.h).
 */
#include "smqd/api_call.h"

#include <string.h>

void api_call_init(struct api_call *call)
{
    memset(call, 0, sizeof *call);
    op_init(&call->op, SMQ_OP_GET_QUEUE);
}

void api_call_free(struct api_call *call)
{
    op_release(&call->op);
    xml_send_batch_free(&call->send);
    xml_handles_free(&call->handles);
    xml_publish_free(&call->publish);
}
