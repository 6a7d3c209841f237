"""The dataset page's "Delete raw data" form (releases/services/raw_data.py)."""

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from releases import selectors
from releases.curator_views import curator_required, dataset_page_render
from releases.refusals import refusal_text
from releases.services.errors import Conflict, ValidationFailed
from releases.services.raw_data import REASON_MAX_LENGTH, dataset_raw_delete


class RawDataDeleteForm(forms.Form):
    reason = forms.CharField(
        max_length=REASON_MAX_LENGTH,
        error_messages={
            "required": "Say why the raw data is deleted.",
            "max_length": f"Use at most {REASON_MAX_LENGTH} characters.",
        },
    )
    confirm = forms.BooleanField(
        error_messages={
            "required": "Tick the box to confirm: deleting the raw data cannot be undone."
        }
    )


@curator_required
@require_POST
def dataset_raw_delete_view(request, pk: int):
    """Delete the signed-in curator's dataset's raw data (404 for anyone else's); on a refusal
    the dataset page is shown again with the form as it was sent and why, nothing deleted."""
    dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=pk)
    form = RawDataDeleteForm(request.POST)
    if form.is_valid():
        try:
            dataset_raw_delete(
                dataset_id=dataset.pk, actor=request.user, reason=form.cleaned_data["reason"]
            )
        except ValidationFailed as error:
            for path, texts in error.errors.items():
                for text in texts:
                    form.add_error(path if path in form.fields else None, text)
        except Conflict as refusal:
            form.add_error(None, refusal_text(refusal.detail))
        else:
            messages.success(
                request,
                gettext(
                    "The raw data was deleted. Published versions, the ledger and the audit trail "
                    "are kept; open drafts were closed."
                ),
            )
            return redirect("dataset-detail", pk=dataset.pk)
    for texts in form.errors.values():
        for text in texts:
            messages.error(request, gettext("Nothing was deleted: %(why)s") % {"why": text})
    return dataset_page_render(request, dataset, raw_delete_form=form)
