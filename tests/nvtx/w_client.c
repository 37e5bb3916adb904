/*
 * A second NVTX "client library" for tests/nvtx: it carries its own copy of
 * NVTX (hidden globals), so NVTX calls InitializeInjectionNvtx2 once for it
 * and once for the program that links it.
 */
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void w_client_work(void);

void w_client_work(void)
{
    nvtxDomainHandle_t d = nvtxDomainCreateA("client");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "client-range";
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
    nvtxRangePushA("client-default");
    nvtxRangePop();
}
