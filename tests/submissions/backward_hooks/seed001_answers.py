# %% backward_collect
# TODO: 답을 x1.grad, x2.grad, output.grad 순서로 list에 차례차례 넣으세요!
answer = []

# TODO : hook를 이용해서 x1.grad, x2.grad, output.grad 값을 알아내 answer에 저장하세요
def module_hook(module, grad_input, grad_output):
    for gi in grad_input:
        answer.append(gi)
    answer.append(grad_output[0])
    pass

model.register_full_backward_hook(module_hook)

# %% tensor_hook_W
# TODO : hook를 이용해서 W의 gradient 값을 알아내 answer에 저장하세요
def tensor_hook(grad):
#     print(grad)
    answer.append(grad)
    pass

model.W.register_hook(tensor_hook)
